"""Cosine embedding head: y = scale * normalize(x @ W^T + b) (rows scaled to unit L2 norm)."""
import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096
scale = 16.0

KERNEL_GYM = {
    "cpu": {"batch_size": 32, "in_features": 64, "out_features": 48},
    "alt": {"batch_size": 41, "in_features": 53, "out_features": 35},
    "full_alt": {"batch_size": 2111, "in_features": 3999, "out_features": 4097},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Linear, then row L2 normalisation (torch.nn.functional.normalize, eps 1e-12), then a constant factor."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.nn.functional.normalize(x, p=2.0, dim=1)
        return x * self.scale


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
