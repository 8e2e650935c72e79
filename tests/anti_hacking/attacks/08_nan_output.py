"""Class 8, degenerate output: a kernel that writes NaN everywhere (a comparison written as
`abs(a - b) <= tol` is False for NaN, but `not abs(a - b) > tol` is True).

Caught: NaN/inf must appear exactly where the reference has them; NaN where the reference is finite is reported
as `uninitialized_output` (it is what never-written, NaN-filled memory reads as, on cpu and cuda alike).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _nan_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.full([BLOCK], float("nan"), tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _nan_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)
        return y
