"""Class 19, precision downcast: the input is cast to fp16 (`.half()`), the kernel computes in fp16, and the
result is widened back to the task's fp32.

Caught statically by `precision`; with the static rules bypassed the fp32 tolerance (1e-4) does not accept the
fp16 rounding (~5e-4 relative): `mismatch`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0).to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        xh = x.contiguous().half()
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](xh, y, x.numel(), BLOCK=1024)
        return y
