"""Class 2, decoy kernel that does a trivial but necessary part of the work: the Triton kernel only copies x,
the ReLU itself is torch compute written as Python operators (`y * (y > 0)`), invisible to `library_op`.

The ablation trial cannot tell: with the copy skipped the output is garbage, so the kernel "matters". Passes
the static rules; caught by the op audit, which sees aten.gt and aten.mul at the dispatcher: `torch_compute`
(strict, kevin-strict, standard). Under `permissive` (any op tolerated, the kernel does a necessary part) it is
not rejected.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y * (y > 0)
