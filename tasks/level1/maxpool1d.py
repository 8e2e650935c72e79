"""nn.MaxPool1d, kernel 4, stride 4, on an (N, C, L) fp32 tensor."""
import torch
import torch.nn as nn

batch_size = 64
channels = 128
length = 16384
kernel_size = 4

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 4, "length": 64},
    "alt": {"batch_size": 3, "channels": 5, "length": 77},
    "full_alt": {"batch_size": 60, "channels": 125, "length": 16001},
    "dtype": "float32",
}


class Model(nn.Module):
    """Max over non-overlapping windows of 4 along the last dimension."""

    def __init__(self, kernel_size: int):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [kernel_size]
