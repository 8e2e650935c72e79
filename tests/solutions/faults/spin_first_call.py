"""A kernel that never ends in the very first call of forward (it spins on a flag nobody sets, through a volatile
load the compiler cannot drop), after Triton compiled it: the first call's compile is a compile segment, its run
is under the call limit."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

FAULT = "timeout"


@triton.jit
def _relu_spin_kernel(x_ptr, y_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    while tl.load(flag_ptr, volatile=True) == 0:
        pass
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        _relu_spin_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, flag, x.numel(), BLOCK=1024)
        torch.cuda.synchronize()
        return y
