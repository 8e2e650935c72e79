"""Class 6, partial write: the kernel writes only the first half of the output; the rest is whatever
`torch.empty_like` handed back.

Defenses: the comparison covers every element, and fresh memory is NaN-filled (cuda: before every call; cpu:
torch's deterministic fill of `torch.empty*`), so the unwritten half reads NaN: `uninitialized_output`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        half = x.numel() // 2
        _relu_kernel[(triton.cdiv(half, 1024),)](x, y, half, BLOCK=1024)
        return y
