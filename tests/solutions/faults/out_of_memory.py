"""A forward that asks for far more GPU memory than any card has (an out-of-memory verdict, confirmed alone when
other jobs were running: the confirmation must not hold them up)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

FAULT = "oom"


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(1 << 40, dtype=torch.uint8, device=x.device)  # 1 TiB
        y = torch.empty_like(x)
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y + scratch[:1].float() * 0
