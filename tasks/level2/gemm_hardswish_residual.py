"""y = z + scale * hardswish(z) with z = x @ W^T + b."""
import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096
scale = 0.5

KERNEL_GYM = {
    "cpu": {"batch_size": 32, "in_features": 64, "out_features": 48},
    "alt": {"batch_size": 41, "in_features": 53, "out_features": 35},
    "full_alt": {"batch_size": 2111, "in_features": 3999, "out_features": 4097},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Linear, then a hardswish branch scaled by a constant, added back to the Linear output."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.linear(x)
        return z + self.scale * torch.nn.functional.hardswish(z)


def get_inputs():
    # scaled so z covers all three pieces of hardswish
    return [torch.randn(batch_size, in_features) * 4.0]


def get_init_inputs():
    return [in_features, out_features, scale]
