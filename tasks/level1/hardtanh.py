"""Elementwise hardtanh: clamp(x, min_val, max_val) with asymmetric bounds."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 16384
min_val = -0.75
max_val = 1.25

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 9001, "dim": 12007},
    "dtype": "float32",
}


class Model(nn.Module):
    """Clamps every element to [min_val, max_val]."""

    def __init__(self, min_val: float, max_val: float):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [min_val, max_val]
