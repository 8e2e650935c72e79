"""Temporal conv block: Conv1d (padding 1) + GELU + MaxPool1d(2) + constant scale."""
import torch
import torch.nn as nn

batch_size = 32
in_channels = 128
out_channels = 256
length = 8192
kernel_size = 3
scale = 0.5

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 4, "out_channels": 8, "length": 64},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 7, "length": 77},
    "full_alt": {"batch_size": 30, "in_channels": 125, "out_channels": 250, "length": 8001},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Conv1d with same padding, exact GELU, max pooling over windows of 2, then a constant factor."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, scale: float):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.pool = nn.MaxPool1d(2)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.gelu(self.conv(x))
        x = self.pool(x)
        return x * self.scale


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale]
