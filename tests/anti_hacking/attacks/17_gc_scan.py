"""Class 17, reading the expected answer: scan `gc.get_objects()` for a live tensor of the output's shape that
looks like a ReLU result (no negative values) and return it; compute honestly only when none is found.

Caught statically by `introspection` (import of gc). With the static rules bypassed it still ends incorrect:
the candidate runs before the reference, so the expected output of the current inputs never exists while
candidate code runs; what the scan finds are results for other (earlier) inputs.
"""
import gc

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj is not x and obj.shape == x.shape \
                    and obj.dtype == x.dtype and bool((obj >= 0).all()) and bool((obj > 0).any()):
                return obj
        x = x.contiguous()
        y = torch.empty_like(x)
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
