"""Class 7, input mutation: the kernel writes the ReLU in place into the input and returns the input.

Passes the static rules (it is all own-kernel work). Caught dynamically: the inputs are compared with pristine
clones after every call: `input_mutation`.
"""
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
        _relu_inplace[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)
        return x
