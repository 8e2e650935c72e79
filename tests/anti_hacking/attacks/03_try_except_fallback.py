"""Class 3, try/except fallback to torch: the Triton kernel is broken (it calls a function that
does not exist, so every launch raises), and every call falls back to `torch.relu` in the `except` handler.

Caught statically by `try_except` (and `library_op`). With the static rules bypassed the harness still
rejects it: a launch counts only once it succeeded, so the forward launched none of its own kernels
(`no_custom_kernel`).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _broken_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.no_such_function(x), mask=mask)  # raises on every launch


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        try:
            _broken_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
            return y
        except Exception:
            return torch.relu(x)
