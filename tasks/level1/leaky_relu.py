"""Elementwise leaky ReLU: y = x if x > 0 else negative_slope * x."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 16384
negative_slope = 0.05

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 9001, "dim": 12007},
    "dtype": "float32",
}


class Model(nn.Module):
    """Applies leaky ReLU with a constant negative slope."""

    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x, self.negative_slope)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [negative_slope]
