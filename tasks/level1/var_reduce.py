"""Unbiased row variance of a 2-D fp32 tensor (correction=1)."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 24576

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 9001, "dim": 20011},
    "dtype": "float32",
}


class Model(nn.Module):
    """Computes the variance over the last dimension with Bessel's correction."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.var(x, dim=-1, correction=1)


def get_inputs():
    # a large mean relative to the spread punishes a one-pass E[x^2] - E[x]^2
    return [torch.randn(batch_size, dim) * 2.0 + 5.0]


def get_init_inputs():
    return []
