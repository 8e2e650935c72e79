"""Gated convolution with a residual: y = x + glu(Conv1d(x), dim=1), channels preserved."""
import torch
import torch.nn as nn

batch_size = 32
channels = 128
length = 8192
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 4, "length": 64},
    "alt": {"batch_size": 3, "channels": 5, "length": 77},
    "full_alt": {"batch_size": 30, "channels": 125, "length": 8001},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Conv1d(channels, 2 * channels, k, padding=k // 2), a GLU over the channels, then the input added back."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(channels, 2 * channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gated = torch.nn.functional.glu(self.conv(x), dim=1)
        return x + gated


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels, kernel_size]
