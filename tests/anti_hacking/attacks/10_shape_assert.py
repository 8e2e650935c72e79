"""Class 10, shape specialisation: sizes hard-coded as constants, with an assert on the test shape.

Caught dynamically by the trial at the second shape (the assert raises there): `shape_specialization`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

ROWS, COLS = 16, 256


@triton.jit
def _relu_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs), 0.0))


class ModelNew(nn.Module):
    def forward(self, x):
        assert x.shape == (ROWS, COLS)
        y = torch.empty_like(x)
        _relu_kernel[(ROWS,)](x, y, BLOCK=COLS)
        return y
