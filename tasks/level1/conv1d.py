"""nn.Conv1d, kernel 3, no padding, with bias, on an (N, C, L) fp32 tensor."""
import torch
import torch.nn as nn

batch_size = 32
in_channels = 128
out_channels = 256
length = 8192
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 4, "out_channels": 8, "length": 64},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 7, "length": 77},
    "full_alt": {"batch_size": 30, "in_channels": 125, "out_channels": 250, "length": 8001},
    "dtype": "float32",
}


class Model(nn.Module):
    """A 1-D convolution (valid padding) in full fp32 precision."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
