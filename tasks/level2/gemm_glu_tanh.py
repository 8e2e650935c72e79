"""Gated linear unit head: [a, b] = x @ W^T + bias, y = tanh(a * sigmoid(b))."""
import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096

KERNEL_GYM = {
    "cpu": {"batch_size": 32, "in_features": 64, "out_features": 48},
    "alt": {"batch_size": 41, "in_features": 53, "out_features": 35},
    "full_alt": {"batch_size": 2111, "in_features": 3999, "out_features": 4097},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Linear to 2 * out_features, torch.nn.functional.glu over the features, then tanh."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, 2 * out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.nn.functional.glu(x, dim=1)
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(batch_size, in_features) * 3.0]


def get_init_inputs():
    return [in_features, out_features]
