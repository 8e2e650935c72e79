"""Fused Conv3d + BatchNorm3d (training mode) + ReLU + AvgPool3d(2)."""
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
    """nn.Conv3d (valid), nn.BatchNorm3d over the channels (batch statistics), ReLU, then 2x2x2 average pooling.

    The BatchNorm affine parameters are re-initialised randomly so that ignoring them is caught.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm3d(out_channels)
        with torch.no_grad():
            self.bn.weight.copy_(1.0 + 0.5 * torch.randn(out_channels))
            self.bn.bias.copy_(0.5 * torch.randn(out_channels))
        self.pool = nn.AvgPool3d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.bn(self.conv(x))
        x = torch.relu(x)
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
