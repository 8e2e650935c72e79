"""Decoy (backend="cute_dsl"): a CuTe DSL kernel runs on every call but writes a scratch buffer nobody reads; the
answer is torch.relu. Static rules: library_op; under `permissive` the ablation trial (decoy_kernel)."""
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack

THREADS = 256


@cute.kernel
def scratch_kernel(x: cute.Tensor, scratch: cute.Tensor, n: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    i = bid * THREADS + tid
    if i < n:
        scratch[i] = x[i] * 2.0


@cute.jit
def touch(x: cute.Tensor, scratch: cute.Tensor, n: cutlass.Int32, stream: cuda.CUstream):
    scratch_kernel(x, scratch, n).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1),
                                         stream=stream)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._compiled = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().view(-1)
        scratch = torch.empty_like(flat)
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        args = (from_dlpack(flat), from_dlpack(scratch), flat.numel(), stream)
        key = (flat.numel(), flat.dtype)
        if key not in self._compiled:
            self._compiled[key] = cute.compile(touch, *args)
        self._compiled[key](*args)
        return torch.relu(x)
