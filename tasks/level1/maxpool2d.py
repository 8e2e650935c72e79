"""nn.MaxPool2d, kernel 3, stride 2, padding 1, on an NCHW fp32 tensor."""
import torch
import torch.nn as nn

batch_size = 32
channels = 64
height = 256
width = 256
kernel_size = 3
stride = 2
padding = 1

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 4, "height": 16, "width": 16},
    "alt": {"batch_size": 3, "channels": 5, "height": 19, "width": 17},
    "full_alt": {"batch_size": 30, "channels": 61, "height": 251, "width": 263},
    "dtype": "float32",
}


class Model(nn.Module):
    """Max over overlapping 3x3 windows with stride 2 (padding counts as -inf)."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
