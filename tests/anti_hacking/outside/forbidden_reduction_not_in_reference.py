"""Policy pattern, forbidden (level1/softmax): the row sums of the kernel's (shifted) exponentials are taken in PyTorch and a
second kernel divides by them. The reference does not end in a reduction (a softmax): the library sum is part of the
task's work."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _exp_shifted(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    tl.store(y_ptr + row * n_cols + cols, tl.exp(x - tl.max(x, axis=0)), mask=mask)


@triton.jit
def _divide_rows(e_ptr, s_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    e = tl.load(e_ptr + row * n_cols + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, e / tl.load(s_ptr + row), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        e = torch.empty_like(x)
        _exp_shifted[(rows,)](x, e, cols, BLOCK=triton.next_power_of_2(cols))
        s = e.sum(dim=1)
        y = torch.empty_like(x)
        _divide_rows[(rows,)](e, s, y, cols, BLOCK=triton.next_power_of_2(cols))
        return y
