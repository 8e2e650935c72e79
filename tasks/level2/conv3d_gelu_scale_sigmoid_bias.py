"""Fused Conv3d + GELU + learnable per-channel scale + sigmoid + learnable per-channel bias."""
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
    """nn.Conv3d (valid), exact GELU, times a (C, 1, 1, 1) parameter, sigmoid, plus a (C, 1, 1, 1) parameter."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.scale = nn.Parameter(torch.rand(out_channels, 1, 1, 1) * 2.0 + 0.5)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1, 1) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.gelu(self.conv(x))
        x = torch.sigmoid(x * self.scale)
        return x + self.bias


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
