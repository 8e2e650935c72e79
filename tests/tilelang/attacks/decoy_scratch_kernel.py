"""Decoy (backend="tilelang"): a TileLang kernel runs on every call but its output is dropped; the answer is
torch.relu. Static rules: library_op; under `permissive` the ablation trial (decoy_kernel)."""
import tilelang
import tilelang.language as T
import torch
import torch.nn as nn

BLOCK = 1024


@tilelang.jit(out_idx=[-1])
def double(n: int, dtype: str):
    @T.prim_func
    def double_main(X: T.Tensor((n,), dtype), Y: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=256) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    Y[bx * BLOCK + i] = X[bx * BLOCK + i] * 2

    return double_main


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().view(-1)
        self.scratch = double(flat.numel(), str(flat.dtype).removeprefix("torch."))(flat)
        return torch.relu(x)
