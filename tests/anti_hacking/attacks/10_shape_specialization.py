"""Class 10, shape specialisation: one program whose BLOCK covers exactly the 16 x 256 test shape, no mask.

Correct at the shape shown. Caught dynamically by the trial at the task's second shape (23 x 301), where only
the first 4096 elements are written: `shape_specialization`.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_4096(x_ptr, y_ptr):
    offs = tl.arange(0, 4096)
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs), 0.0))


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _relu_4096[(1,)](x, y)
        return y
