"""Fused ConvTranspose3d (2x up) + hardsigmoid + AvgPool3d(2) + mean over channels: (N, D, H, W)."""
import torch
import torch.nn as nn

batch_size = 16
in_channels = 64
out_channels = 32
depth = 16
height = 32
width = 32
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 4, "out_channels": 3, "depth": 4, "height": 4, "width": 4},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 2, "depth": 3, "height": 5, "width": 4},
    "full_alt": {"batch_size": 15, "in_channels": 61, "out_channels": 29, "depth": 15, "height": 33, "width": 31},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.ConvTranspose3d(k=3, stride 2, padding 1, output_padding 1), hardsigmoid, 2x2x2 average pooling, then the channel mean."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=2, padding=1, output_padding=1)
        self.pool = nn.AvgPool3d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.hardsigmoid(self.conv(x) * 4.0)
        x = self.pool(x)
        return x.mean(dim=1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
