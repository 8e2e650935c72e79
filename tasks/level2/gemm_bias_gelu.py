"""Fused Linear + exact (erf) GELU + constant multiply: y = gelu(x @ W^T + b) * multiplier."""
import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096
multiplier = 0.75

KERNEL_GYM = {
    "cpu": {"batch_size": 32, "in_features": 64, "out_features": 48},
    "alt": {"batch_size": 41, "in_features": 53, "out_features": 35},
    "full_alt": {"batch_size": 2111, "in_features": 3999, "out_features": 4097},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Linear, then exact GELU (approximate='none'), then multiplication by a constant."""

    def __init__(self, in_features: int, out_features: int, multiplier: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.multiplier = multiplier

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.nn.functional.gelu(x)
        return x * self.multiplier


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, multiplier]
