"""Fused ConvTranspose2d (2x up) + clamp(-1, 1) + InstanceNorm2d + constant scale."""
import torch
import torch.nn as nn

batch_size = 64
in_channels = 64
out_channels = 32
height = 64
width = 64
kernel_size = 4
scale = 2.0

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 4, "out_channels": 4, "height": 8, "width": 8},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 6, "height": 9, "width": 7},
    "full_alt": {"batch_size": 60, "in_channels": 61, "out_channels": 30, "height": 61, "width": 67},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.ConvTranspose2d(k=4, stride 2, padding 1), a clamp, nn.InstanceNorm2d (no affine), then a constant factor."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, scale: float):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1)
        self.norm = nn.InstanceNorm2d(out_channels)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.clamp(self.conv(x), -1.0, 1.0)
        x = self.norm(x)
        return x * self.scale


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width) * 2.0]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale]
