"""A kernel that stores far outside its output (an unmasked store at a wild offset): an illegal memory access, a
sticky error that ends the runner's CUDA context."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

FAULT = "crash"


@triton.jit
def _relu_wild_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs + (1 << 40), tl.maximum(x, 0.0))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _relu_wild_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
        return y
