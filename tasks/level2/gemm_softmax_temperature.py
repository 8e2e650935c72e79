"""Classifier head: y = softmax(x @ W^T + b, dim=1) * t, t a learnable per-class weight."""
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
    """nn.Linear, softmax over the classes, then an elementwise product with a learnable (out_features,) vector."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.class_weight = nn.Parameter(torch.rand(out_features) * 2.0 + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.softmax(x, dim=1)
        return x * self.class_weight


def get_inputs():
    # scaled so the logits spread and the softmax is not flat
    return [torch.randn(batch_size, in_features) * 4.0]


def get_init_inputs():
    return [in_features, out_features]
