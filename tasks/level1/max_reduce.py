"""Maximum of a 3-D fp32 tensor over its last dimension: (B, D1, D2) -> (B, D1)."""
import torch
import torch.nn as nn

batch_size = 160
dim1 = 1024
dim2 = 1024
reduce_dim = 2

KERNEL_GYM = {
    "cpu": {"batch_size": 4, "dim1": 64, "dim2": 64},
    "alt": {"batch_size": 3, "dim1": 77, "dim2": 45},
    "full_alt": {"batch_size": 150, "dim1": 1300, "dim2": 999},
    "dtype": "float32",
}


class Model(nn.Module):
    """Takes the maximum over dimension `dim` (values only, keepdim=False)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x, dim=self.dim)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
