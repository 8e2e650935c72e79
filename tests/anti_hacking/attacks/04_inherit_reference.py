"""Class 4, inheritance/reference reuse: the solution carries a copy of the reference `Model`, inherits from
it and calls `super().forward`; a Triton kernel runs into a scratch buffer so that a launch is seen.

Caught statically by `reference_reuse`; with the static rules bypassed, the op audit sees the inherited
forward's aten.relu (`torch_compute`); under `permissive` the ablation trial (every Triton launch skipped, output
still right) would give `decoy_kernel`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


@triton.jit
def _scratch_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(Model):
    def forward(self, x):
        x = x.contiguous()
        scratch = torch.empty_like(x)
        _scratch_kernel[(triton.cdiv(x.numel(), 1024),)](x, scratch, x.numel(), BLOCK=1024)
        return super().forward(x)
