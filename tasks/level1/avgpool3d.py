"""nn.AvgPool3d, kernel 3, stride 2, padding 1 (padding counted in the average), NCDHW fp32."""
import torch
import torch.nn as nn

batch_size = 8
channels = 32
depth = 64
height = 64
width = 128
kernel_size = 3
stride = 2
padding = 1

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 2, "depth": 8, "height": 8, "width": 8},
    "alt": {"batch_size": 3, "channels": 3, "depth": 7, "height": 9, "width": 6},
    "full_alt": {"batch_size": 8, "channels": 31, "depth": 63, "height": 67, "width": 121},
    "dtype": "float32",
}


class Model(nn.Module):
    """Average over overlapping 3x3x3 windows with stride 2; zero padding is included in the divisor."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.AvgPool3d(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
