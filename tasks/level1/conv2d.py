"""nn.Conv2d, 3x3, stride 1, padding 1, with bias, on an NCHW fp32 tensor."""
import torch
import torch.nn as nn

batch_size = 32
in_channels = 64
out_channels = 128
height = 128
width = 128
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 3, "out_channels": 8, "height": 16, "width": 16},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 7, "height": 19, "width": 17},
    "full_alt": {"batch_size": 30, "in_channels": 61, "out_channels": 125, "height": 131, "width": 117},
    "dtype": "float32",
}


class Model(nn.Module):
    """A standard 2-D convolution (same padding) in full fp32 precision."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
