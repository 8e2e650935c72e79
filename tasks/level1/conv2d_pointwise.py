"""Pointwise (1x1) nn.Conv2d with bias on an NCHW fp32 tensor: a per-pixel GEMM."""
import torch
import torch.nn as nn

batch_size = 32
in_channels = 256
out_channels = 256
height = 64
width = 64

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 8, "out_channels": 16, "height": 8, "width": 8},
    "alt": {"batch_size": 3, "in_channels": 9, "out_channels": 13, "height": 7, "width": 9},
    "full_alt": {"batch_size": 30, "in_channels": 250, "out_channels": 257, "height": 61, "width": 67},
    "dtype": "float32",
}


class Model(nn.Module):
    """A 1x1 convolution mixing channels at every pixel."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
