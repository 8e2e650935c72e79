"""Shape (level1/softmax): a wrapper that allocates its scratch and output with `torch.full`, `torch.zeros` and
`torch.empty` and runs three kernels (row max, row sum of exponentials, normalize)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_max(x_ptr, m_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.load(m_ptr + row)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
        m = tl.maximum(m, tl.max(x, axis=0))
    tl.store(m_ptr + row, m)


@triton.jit
def _row_sum_exp(x_ptr, m_ptr, s_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.load(m_ptr + row)
    s = tl.load(s_ptr + row)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
        s += tl.sum(tl.exp(x - m), axis=0)
    tl.store(s_ptr + row, s)


@triton.jit
def _normalize(x_ptr, m_ptr, s_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.load(m_ptr + row)
    s = tl.load(s_ptr + row)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        tl.store(y_ptr + row * n_cols + cols, tl.exp(x - m) / s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.contiguous().view(-1, x.shape[-1])
        rows, cols = x2.shape
        row_max = torch.full((rows,), float("-inf"), device=x.device, dtype=torch.float32)
        row_sum = torch.zeros((rows,), device=x.device, dtype=torch.float32)
        y = torch.empty_like(x2)
        _row_max[(rows,)](x2, row_max, cols, BLOCK=256)
        _row_sum_exp[(rows,)](x2, row_max, row_sum, cols, BLOCK=256)
        _normalize[(rows,)](x2, row_max, row_sum, y, cols, BLOCK=256)
        return y.view(x.shape)
