"""Elementwise ELU: y = x if x > 0 else alpha * (exp(x) - 1)."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 16384
alpha = 0.8

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 9001, "dim": 12007},
    "dtype": "float32",
}


class Model(nn.Module):
    """Applies ELU with a constant alpha."""

    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.elu(x, alpha=self.alpha)


def get_inputs():
    return [torch.randn(batch_size, dim) * 2.0]


def get_init_inputs():
    return [alpha]
