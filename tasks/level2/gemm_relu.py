"""Fused GEMM + bias + ReLU + scale: y = relu(x @ W^T + b) * scale."""
import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096
scale = 1.5

KERNEL_GYM = {
    "cpu": {"batch_size": 32, "in_features": 64, "out_features": 48},
    "alt": {"batch_size": 37, "in_features": 50, "out_features": 29},
    "full_alt": {"batch_size": 1999, "in_features": 4001, "out_features": 3333},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Linear (GEMM + bias), then ReLU, then multiplication by a constant."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.relu(x)
        return x * self.scale


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
