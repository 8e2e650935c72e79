"""Minimum of a 3-D fp32 tensor over its first (batch) dimension: (B, D1, D2) -> (D1, D2)."""
import torch
import torch.nn as nn

batch_size = 160
dim1 = 1024
dim2 = 1024
reduce_dim = 0

KERNEL_GYM = {
    "cpu": {"batch_size": 4, "dim1": 64, "dim2": 64},
    "alt": {"batch_size": 3, "dim1": 77, "dim2": 45},
    "full_alt": {"batch_size": 150, "dim1": 1300, "dim2": 999},
    "dtype": "float32",
}


class Model(nn.Module):
    """Takes the minimum over dimension `dim` (values only, keepdim=False)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amin(x, dim=self.dim)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
