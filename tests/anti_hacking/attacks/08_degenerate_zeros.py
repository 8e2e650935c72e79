"""Class 8, degenerate output: on a task whose outputs are ~1e-6 (tasks/tiny_scale.py), a kernel that writes
zeros is within atol=1e-4 of every element.

Caught dynamically by the relative L2 bound ||out - ref|| / ||ref|| <= 0.01: `degenerate_output`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _zeros_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _zeros_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)
        return y
