"""nn.Conv3d, 3x3x3, no padding, with bias, on an NCDHW fp32 tensor."""
import torch
import torch.nn as nn

batch_size = 8
in_channels = 16
out_channels = 32
depth = 32
height = 64
width = 64
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 1, "in_channels": 2, "out_channels": 4, "depth": 6, "height": 8, "width": 8},
    "alt": {"batch_size": 2, "in_channels": 3, "out_channels": 5, "depth": 7, "height": 9, "width": 6},
    "full_alt": {"batch_size": 7, "in_channels": 15, "out_channels": 31, "depth": 33, "height": 61, "width": 67},
    "dtype": "float32",
}


class Model(nn.Module):
    """A 3-D convolution (valid padding) in full fp32 precision."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
