"""Genuine (level1/softmax, strict): several kernels. A first kernel writes each row's max and sum of
exponentials into torch.empty scratch buffers, a second normalises; row-major 2-D view of any-rank input."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_stats(x_ptr, max_ptr, sum_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("-inf"))
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("-inf"))
        s += tl.exp(x - row_max)
    tl.store(max_ptr + row, row_max)
    tl.store(sum_ptr + row, tl.sum(s, axis=0))


@triton.jit
def _normalise(x_ptr, max_ptr, sum_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col0 = tl.program_id(1) * BLOCK
    cols = col0 + tl.arange(0, BLOCK)
    mask = cols < n_cols
    row_max = tl.load(max_ptr + row)
    row_sum = tl.load(sum_ptr + row)
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + cols, tl.exp(x - row_max) / row_sum, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        shape = x.shape
        x2 = x.contiguous().reshape(-1, shape[-1])
        rows, cols = x2.shape
        row_max = torch.empty(rows, dtype=torch.float32, device=x.device)
        row_sum = torch.empty(rows, dtype=torch.float32, device=x.device)
        y = torch.empty_like(x2)
        BLOCK = min(1024, triton.next_power_of_2(cols))
        _row_stats[(rows,)](x2, row_max, row_sum, cols, x2.stride(0), BLOCK=BLOCK)
        _normalise[(rows, triton.cdiv(cols, BLOCK))](x2, row_max, row_sum, y, cols, x2.stride(0), BLOCK=BLOCK)
        return y.view(shape)
