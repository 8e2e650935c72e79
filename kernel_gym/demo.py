"""The scripted demo episode: a wrong kernel, a compile error, then a correct Triton kernel for level1/relu."""

from __future__ import annotations

_KERNEL = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, {body}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
'''

RESPONSES = [
    "ReLU is memory-bound: one load and one store per element, so a flat 1-D grid with BLOCK=1024 "
    "should reach bandwidth. I clamp with tl.minimum.\n```python\n" + _KERNEL.format(body="tl.minimum(x, 0.0)") + "```\n",
    "The output was wrong because I used minimum instead of maximum. Fix it with a where on a comparison "
    "helper.\n```python\n" + _KERNEL.format(body="tl.where(x > 0.0, x, tl.zeros_like(x, dtype=tl.float32))") + "```\n",
    "The zeros helper does not exist in triton.language; tl.maximum is the simple fix and stays memory-bound "
    "with one fused pass.\n```python\n" + _KERNEL.format(body="tl.maximum(x, 0.0)") + "```\n",
]
TASK = "level1/relu"
