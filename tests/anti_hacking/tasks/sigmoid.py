"""Elementwise sigmoid on a 2-D fp32 tensor (for the input-distribution attack)."""
import torch
import torch.nn as nn

batch_size = 4096
dim = 4096

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "dtype": "float32",
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
