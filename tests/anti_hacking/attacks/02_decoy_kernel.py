"""Class 2, decoy kernel: a Triton kernel runs (into a scratch buffer) so a kernel "was launched", but the
returned result is computed by torch.

Caught statically by `library_op` (torch.relu in forward); with the static rules bypassed the op audit sees
aten.relu: `torch_compute`. Under `permissive` (library ops tolerated) the ablation trial skips every Triton
launch and the output is still right: `decoy_kernel`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scratch_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        scratch = torch.empty_like(x)
        n = x.numel()
        _scratch_kernel[(triton.cdiv(n, 1024),)](x, scratch, n, BLOCK=1024)
        return torch.relu(x)
