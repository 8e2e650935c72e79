"""ReLU in CuTe DSL (our own): one thread an element of the flattened tensor, computed in fp32 and stored in the
tensor's dtype; the compiled host function is kept per (size, dtype)."""
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack

THREADS = 256


@cute.kernel
def relu_kernel(x: cute.Tensor, y: cute.Tensor, n: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    i = bid * THREADS + tid
    if i < n:
        y[i] = cutlass.max(x[i].to(cutlass.Float32), cutlass.Float32(0.0)).to(y.element_type)


@cute.jit
def relu(x: cute.Tensor, y: cute.Tensor, n: cutlass.Int32, stream: cuda.CUstream):
    relu_kernel(x, y, n).launch(grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1), stream=stream)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._compiled = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().view(-1)
        out = torch.empty_like(flat)
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        args = (from_dlpack(flat), from_dlpack(out), flat.numel(), stream)
        key = (flat.numel(), flat.dtype)
        if key not in self._compiled:
            self._compiled[key] = cute.compile(relu, *args)
        self._compiled[key](*args)
        return out.view_as(x)
