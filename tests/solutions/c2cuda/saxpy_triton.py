"""c2cuda/saxpy in Triton: y <- a*x + y, returned as a new tensor (runs under the Triton interpreter on CPU)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def saxpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.a = a

    def forward(self, x, y):
        out = torch.empty_like(y)
        n = x.numel()
        saxpy_kernel[(triton.cdiv(n, 1024),)](x, y, out, self.a, n, BLOCK=1024)
        return out
