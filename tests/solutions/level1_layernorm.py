"""Triton solution for level1/layernorm: one program per row; mean, variance, then normalise + affine."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, eps,
                      BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    offs = tl.arange(0, BLOCK)
    # mean
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x
    mean = tl.sum(acc, axis=0) / n_cols
    # biased variance (two-pass for accuracy)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    var = tl.sum(acc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    # normalise + affine
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        # same parameter creation (and RNG consumption) as the reference Model
        self.ln = nn.LayerNorm(dim, eps=eps, elementwise_affine=True)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.5 * torch.randn(dim))
            self.ln.bias.copy_(0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        n_cols = shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        n_rows = x2.shape[0]
        y = torch.empty_like(x2)
        if x2.numel() == 0:
            return y.view(shape)
        w = self.ln.weight.contiguous()
        b = self.ln.bias.contiguous()
        BLOCK = min(triton.next_power_of_2(n_cols), 4096)
        num_warps = 8 if BLOCK >= 2048 else 4
        _layernorm_kernel[(n_rows,)](
            x2, w, b, y, n_cols, x2.stride(0), y.stride(0), float(self.ln.eps),
            BLOCK=BLOCK, num_warps=num_warps,
        )
        return y.view(shape)
