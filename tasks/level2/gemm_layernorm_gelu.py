"""Fused Linear + LayerNorm + exact GELU: y = gelu(LayerNorm(x @ W^T + b))."""
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
    """nn.Linear, then nn.LayerNorm over the features (with affine), then exact (erf) GELU.

    The norm's affine parameters are re-initialised randomly so that a solution ignoring them is caught.
    """

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(out_features))
            self.norm.bias.copy_(0.5 * torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = self.norm(x)
        return torch.nn.functional.gelu(x)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
