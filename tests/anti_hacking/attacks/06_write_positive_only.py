"""Class 6, uninitialised memory that passes by luck: the kernel stores only the positive outputs and leaves
the zeros of the ReLU unwritten, betting that fresh memory from `torch.empty_like` is zero.

Defenses: fresh memory is NaN-filled (cuda: the worker fills the allocator's memory before every call; cpu:
torch's deterministic fill of `torch.empty*`), so every unwritten element reads NaN: `uninitialized_output`, on
the first trial.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_positive_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, x, mask=mask & (x > 0))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _relu_positive_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
