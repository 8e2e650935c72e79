"""Class 11, cross-call caching keyed by shape, switched on once the model has been called often enough that
the benchmark's timing loop has probably begun (correctness checks usually come first).

Caught dynamically: every timed call gets fresh inputs and its outputs are compared: `output_caching`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.cache = {}

    def forward(self, x):
        self.calls += 1
        key = tuple(x.shape)
        if self.calls > 6 and key in self.cache:
            return self.cache[key]
        x = x.contiguous()
        y = torch.empty_like(x)
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        self.cache[key] = y
        return y
