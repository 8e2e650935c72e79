"""Genuine: Triton softmax in three kernels (row max, row sum, normalise), views and torch.empty_like."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_max(x_ptr, m_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("-inf"))
        acc = tl.maximum(acc, x)
    tl.store(m_ptr + row, tl.max(acc, axis=0))


@triton.jit
def _row_sum(x_ptr, m_ptr, s_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = tl.load(m_ptr + row)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=float("-inf"))
        acc += tl.exp(x - m)
    tl.store(s_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def _normalise(x_ptr, m_ptr, s_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col_block = tl.program_id(1)
    cols = col_block * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    m = tl.load(m_ptr + row)
    s = tl.load(s_ptr + row)
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + cols, tl.exp(x - m) / s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def _softmax_2d(self, x2: torch.Tensor) -> torch.Tensor:
        n_rows, n_cols = x2.shape
        row_max = torch.empty(n_rows, device=x2.device, dtype=torch.float32)
        row_sum = torch.empty_like(row_max)
        y = torch.empty_like(x2)
        BLOCK = min(triton.next_power_of_2(n_cols), 2048)
        _row_max[(n_rows,)](x2, row_max, n_cols, x2.stride(0), BLOCK=BLOCK)
        _row_sum[(n_rows,)](x2, row_max, row_sum, n_cols, x2.stride(0), BLOCK=BLOCK)
        _normalise[(n_rows, triton.cdiv(n_cols, BLOCK))](x2, row_max, row_sum, y, n_cols, x2.stride(0),
                                                         BLOCK=BLOCK)
        return y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dtype == torch.float32, "fp32 only"
        xt = x.transpose(self.dim, -1).contiguous()
        shape = xt.shape
        y = self._softmax_2d(xt.reshape(-1, shape[-1]))
        return y.view(shape).transpose(self.dim, -1)
