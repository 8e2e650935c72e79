"""Class 2, decoy kernel once the checks are over: forward computes with its own Triton kernel for the first calls
(the first call, the correctness trials, the op audit, the decoy ablation), then launches a tiny kernel as a decoy
and returns `torch.relu(x)`, so the timed calls measure the library while launches still count.

Caught statically by `library_op`. Dynamically: after timing, one more call like a timed round runs under the op
audit (and, on cuda, the profiler), and its `aten.relu` is `torch_compute`.
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
        x = x.contiguous()
        y = torch.empty_like(x)
        if self.calls > CHECKED_CALLS:
            _relu_kernel[(1,)](x, y, 1, BLOCK=16)  # the decoy: one element
            return torch.relu(x)
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
