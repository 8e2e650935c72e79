"""Class 1, library-op substitution once the checks are over: forward runs its own Triton kernel for the first
calls (the first call, the correctness trials and every check before timing), then only `torch.relu`, so the timed
calls measure the library.

Caught statically by `library_op`. Dynamically, every call counts the solution's own launches, and a later call
that launches none is `no_custom_kernel`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CHECKED_CALLS = 10  # past the op audit (call 6) and the decoy ablation (call 7) of the default config


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > CHECKED_CALLS:
            return torch.relu(x)
        x = x.contiguous()
        y = torch.empty_like(x)
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
