"""Class 1, library-op substitution of the whole task (level1/conv2d, the conv twin of
01_library_gemm_whole_task): `F.conv2d` with the held nn.Conv2d's parameters does the task's only op, a Triton
kernel copies its result.

On a single-convolution task the library convolution is the task: `library_op` rejects it under `standard`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.conv2d(x, self.conv.weight, self.conv.bias, self.conv.stride, self.conv.padding)
        out = torch.empty_like(y)
        n = y.numel()
        _copy[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
