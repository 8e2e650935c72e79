"""Class 2, decoy kernel that hides its library work inside its own launch: the kernel does nothing, and the grid
argument is a callable that computes the whole result with `torch.relu` when the launcher evaluates it. The launch
counts as the solution's own kernel, and a dispatcher audit that ignores the ops a kernel launch makes (the
interpreter's own copies) would miss the relu; skipping the launch (the ablation trial) also skips the relu, so
the output changes as if the kernel did the work.

Caught by the op audit, which tells the launcher's own ops from ops made by code of the solution's file running
inside a launch (`torch_compute`); on the GPU the profiler's share of kernel time sees the library kernel too.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _empty_kernel(y_ptr, n, BLOCK: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)

        def grid(meta):
            y.copy_(torch.relu(x))
            return (1,)

        _empty_kernel[grid](y, y.numel(), BLOCK=1024)
        return y
