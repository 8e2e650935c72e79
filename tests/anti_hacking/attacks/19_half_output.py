"""Class 19, precision downcast of the output: the kernel computes the ReLU and stores it into an fp16 output
tensor, which is returned as is on a float32 task (half the bytes to write; every value within fp16 rounding).

Caught statically by `precision` (`torch.float16` on a float32 task); with the static rules bypassed the output's
dtype is fp16 where the reference's is fp32: `precision_downcast`.
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
    tl.store(y_ptr + offs, tl.maximum(x, 0.0).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.shape, dtype=torch.float16, device=x.device)
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
