"""Class 5, stale output reuse: return `torch.empty_like(x)` and launch a kernel that writes nothing to it,
hoping the allocator hands back memory that still holds a reference result.

Defenses: the candidate always runs before the reference (its outputs never exist while candidate code
runs), so stale memory never holds the right answer; and fresh memory is NaN-filled (cuda: before every call;
cpu: torch's deterministic fill of `torch.empty*`), so the untouched output reads NaN: `uninitialized_output`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _noop_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)  # reads, never writes


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _noop_kernel[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)
        return y
