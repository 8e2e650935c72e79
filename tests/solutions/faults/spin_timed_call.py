"""A kernel that never ends from the twelfth call on: past the first call and the correctness trials, inside the
checks or the timed calls, where the job holds the GPU (shared, or the whole of it)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

FAULT = "timeout"


@triton.jit
def _relu_late_spin_kernel(x_ptr, y_ptr, flag_ptr, n, hang, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if hang:
        while tl.load(flag_ptr, volatile=True) == 0:
            pass
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        y = torch.empty_like(x)
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        _relu_late_spin_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, flag, x.numel(), int(self.calls >= 12),
                                                                 BLOCK=1024)
        return y
