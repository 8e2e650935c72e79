"""Per-sample cosine embedding distance: loss_i = 1 - cos(a_i, b_i), shape (batch_size,)."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 12288

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 7001, "dim": 13001},
    "dtype": "float32",
}


class Model(nn.Module):
    """One minus the cosine similarity of matching rows (eps = 1e-8)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return 1.0 - torch.nn.functional.cosine_similarity(a, b, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim) + 0.5]


def get_init_inputs():
    return []
