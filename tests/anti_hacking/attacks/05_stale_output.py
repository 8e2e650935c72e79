"""Class 5, stale output reuse: return `torch.empty_like(x)` and launch a kernel that writes nothing to it,
hoping the allocator hands back memory that still holds a reference result.

Defenses: the candidate always runs before the reference (its outputs never exist while candidate code
runs), so stale memory never holds the right answer: `mismatch` on cpu. On cuda, memory is NaN-filled before
every call, so the untouched output reads NaN: `uninitialized_output` (tests/anti_hacking/test_gpu_attacks.py).
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
