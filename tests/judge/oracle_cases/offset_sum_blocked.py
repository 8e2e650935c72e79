"""An honest reordering of task_offset_sum: each program sums its row in blocks of 64 (a tree inside a block, the
blocks one after another), then takes the shift off. Its rounding differs from the reference's, by about as much as
the reference's own error."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _offset_row_sum(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-1000.0)
        acc += x + 1000.0
    total = tl.sum(acc, axis=0)
    tl.store(y_ptr + row, total - 1000.0 * n_cols)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty(rows, device=x.device, dtype=x.dtype)
        _offset_row_sum[(rows,)](x, y, cols, BLOCK=64)
        return y
