"""Sum over the middle dimension of a (B, D1, D2) tensor in CuTe DSL (our own): one thread an output element
(b, j), walking the D1 rows of its column in fp32; neighbouring threads read neighbouring j, so every step of the
walk is one coalesced row read."""
import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack

THREADS = 256


@cute.kernel
def column_sum_kernel(x: cute.Tensor, y: cute.Tensor, outputs: cutlass.Int32, d1: cutlass.Int32,
                      d2: cutlass.Int32):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    o = bid * THREADS + tid
    if o < outputs:
        b = o // d2
        j = o % d2
        base = b * d1 * d2 + j
        acc = cutlass.Float32(0.0)
        for r in range(d1):
            acc = acc + x[base + r * d2].to(cutlass.Float32)
        y[o] = acc.to(y.element_type)


@cute.jit
def column_sum(x: cute.Tensor, y: cute.Tensor, outputs: cutlass.Int32, d1: cutlass.Int32, d2: cutlass.Int32,
               stream: cuda.CUstream):
    column_sum_kernel(x, y, outputs, d1, d2).launch(grid=((outputs + THREADS - 1) // THREADS, 1, 1),
                                                    block=(THREADS, 1, 1), stream=stream)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self._compiled = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        b, d1, d2 = x.shape
        out = torch.empty(b, d2, dtype=x.dtype, device=x.device)
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        args = (from_dlpack(x.view(-1)), from_dlpack(out.view(-1)), b * d2, d1, d2, stream)
        key = (b, d1, d2, x.dtype)
        if key not in self._compiled:
            self._compiled[key] = cute.compile(column_sum, *args)
        self._compiled[key](*args)
        return out
