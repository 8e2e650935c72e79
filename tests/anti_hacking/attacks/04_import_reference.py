"""Class 4, importing the reference: `from reference import Model` and delegating to it.

Caught statically by `reference_reuse`. With the static rules bypassed it cannot work either: the reference is
executed in the worker as a fresh module that is never in `sys.modules` and exists nowhere on disk, so the
import fails (`compile_error`, score 0).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from reference import Model


@triton.jit
def _scratch_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ref = Model()

    def forward(self, x):
        scratch = torch.empty_like(x)
        _scratch_kernel[(triton.cdiv(x.numel(), 1024),)](x, scratch, x.numel(), BLOCK=1024)
        return self.ref(x)
