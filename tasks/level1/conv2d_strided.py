"""nn.Conv2d, 5x5, stride 2, padding 2, with bias, on an NCHW fp32 tensor (downsampling)."""
import torch
import torch.nn as nn

batch_size = 32
in_channels = 32
out_channels = 64
height = 256
width = 256
kernel_size = 5

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 3, "out_channels": 8, "height": 16, "width": 16},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 7, "height": 21, "width": 19},
    "full_alt": {"batch_size": 30, "in_channels": 29, "out_channels": 61, "height": 251, "width": 263},
    "dtype": "float32",
}


class Model(nn.Module):
    """A strided 2-D convolution halving height and width."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=2, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
