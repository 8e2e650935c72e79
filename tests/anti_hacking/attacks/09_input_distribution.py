"""Class 9, input-distribution shortcut: a sigmoid (tasks/sigmoid.py) that clamps its input to [-6, 6],
the range a table or polynomial would cover, because `randn` test inputs never leave it.

Exact on the standard inputs; caught dynamically by the trial with every floating input scaled by 16:
`input_distribution`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sigmoid_small_range(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    x = tl.minimum(tl.maximum(x, -6.0), 6.0)  # "inputs are randn: |x| < 6"
    tl.store(y_ptr + offs, 1.0 / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _sigmoid_small_range[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
