"""Genuine (level1/relu, strict): torch.empty output, views and reshapes around one Triton kernel working on a
flattened 1-D view; handles non-contiguous inputs and any rank."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_1d(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.contiguous().view(-1)
        out = torch.empty(flat.numel(), dtype=x.dtype, device=x.device)
        n = flat.numel()
        if n:
            _relu_1d[(triton.cdiv(n, 2048),)](flat, out, n, BLOCK=2048)
        return out.reshape(shape)
