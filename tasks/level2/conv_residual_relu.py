"""ResNet-style residual: y = relu(x + Conv2d(x)), same padding, channels preserved."""
import torch
import torch.nn as nn

batch_size = 64
channels = 64
height = 128
width = 128
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 4, "height": 16, "width": 16},
    "alt": {"batch_size": 3, "channels": 5, "height": 19, "width": 17},
    "full_alt": {"batch_size": 60, "channels": 61, "height": 131, "width": 117},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Conv2d(channels, channels, k, padding=k // 2) with bias, added to its input, then ReLU."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.conv(x))


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]
