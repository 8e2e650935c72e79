"""nn.AvgPool2d, kernel 2, stride 2, on an NCHW fp32 tensor (floor mode)."""
import torch
import torch.nn as nn

batch_size = 32
channels = 64
height = 256
width = 256
kernel_size = 2

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 4, "height": 16, "width": 16},
    "alt": {"batch_size": 3, "channels": 5, "height": 19, "width": 17},
    "full_alt": {"batch_size": 30, "channels": 61, "height": 251, "width": 263},
    "dtype": "float32",
}


class Model(nn.Module):
    """Average over non-overlapping 2x2 windows."""

    def __init__(self, kernel_size: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size]
