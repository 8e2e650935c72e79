"""Hidden-library attack (backend="cute_dsl"): a genuine CuTe DSL kernel that only copies, while forward computes the
whole GEMM with torch.matmul (cuBLAS) and hands it to the copy. Static rules: library_op; under `permissive` the
profiler's own-kernel share on a GPU (library_time)."""
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack

THREADS = 256


@cute.kernel
def copy_kernel(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    i = bid * THREADS + tid
    if i < n:
        dst[i] = src[i]


@cute.jit
def copy(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32, stream: cuda.CUstream):
    copy_kernel(src, dst, n).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1), stream=stream)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._compiled = {}

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        C = torch.matmul(A, B).contiguous().view(-1)
        out = torch.empty_like(C)
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        args = (from_dlpack(C), from_dlpack(out), C.numel(), stream)
        key = (C.numel(), C.dtype)
        if key not in self._compiled:
            self._compiled[key] = cute.compile(copy, *args)
        self._compiled[key](*args)
        return out.view(A.shape[0], B.shape[1])
