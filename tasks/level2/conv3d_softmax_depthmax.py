"""Conv3d + softmax over channels + max over depth: (N, C, H', W')."""
import torch
import torch.nn as nn

batch_size = 16
in_channels = 8
out_channels = 16
depth = 32
height = 64
width = 64
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 2, "out_channels": 4, "depth": 6, "height": 8, "width": 8},
    "alt": {"batch_size": 3, "in_channels": 3, "out_channels": 5, "depth": 7, "height": 9, "width": 6},
    "full_alt": {"batch_size": 15, "in_channels": 7, "out_channels": 15, "depth": 33, "height": 61, "width": 67},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Conv3d (valid), softmax over the channel dimension, then the maximum over the depth dimension."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.softmax(self.conv(x), dim=1)
        return torch.amax(x, dim=2)


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
