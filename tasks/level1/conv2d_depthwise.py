"""Depthwise nn.Conv2d (groups = channels), 3x3, padding 1, with bias, NCHW fp32."""
import torch
import torch.nn as nn

batch_size = 16
channels = 128
height = 256
width = 256
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 4, "height": 16, "width": 16},
    "alt": {"batch_size": 3, "channels": 5, "height": 19, "width": 17},
    "full_alt": {"batch_size": 15, "channels": 120, "height": 250, "width": 263},
    "dtype": "float32",
}


class Model(nn.Module):
    """One 3x3 filter per channel (groups=channels); memory-bound."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]
