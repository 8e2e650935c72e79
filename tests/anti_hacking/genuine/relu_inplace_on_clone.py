"""Genuine (level1/relu, strict): the honest twin of attacks/07_input_mutation.py. The kernel works in place,
but on a clone of the input, never on the input itself."""
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_inplace(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = x.contiguous().clone()
        _relu_inplace[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)
        return y
