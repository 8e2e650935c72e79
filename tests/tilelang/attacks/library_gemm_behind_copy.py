"""Hidden-library attack (backend="tilelang"): a genuine TileLang kernel that only copies, while forward computes the
whole GEMM with torch.matmul (cuBLAS) and hands it to the copy. Static rules: library_op; under `permissive` the
profiler's own-kernel share on a GPU (library_time)."""
import tilelang
import tilelang.language as T
import torch
import torch.nn as nn

BLOCK = 1024


@tilelang.jit(out_idx=[-1])
def copy(n: int, dtype: str):
    @T.prim_func
    def copy_main(X: T.Tensor((n,), dtype), Y: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=256) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    Y[bx * BLOCK + i] = X[bx * BLOCK + i]

    return copy_main


class ModelNew(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        C = torch.matmul(A, B).contiguous().view(-1)
        out = copy(C.numel(), str(C.dtype).removeprefix("torch."))(C)
        return out.view(A.shape[0], B.shape[1])
