"""Fused Linear + ELU + LayerNorm without affine: y = LayerNorm(elu(x @ W^T + b))."""
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
    """nn.Linear, ELU (alpha 1), then LayerNorm over the features with no affine parameters."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features, elementwise_affine=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.nn.functional.elu(x)
        return self.norm(x)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
