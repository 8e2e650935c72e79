"""y = clamp(tanh(x @ W^T) + b, -c, c): a bias-free Linear, tanh, a learnable bias, a clamp."""
import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096
clamp_value = 0.8

KERNEL_GYM = {
    "cpu": {"batch_size": 32, "in_features": 64, "out_features": 48},
    "alt": {"batch_size": 41, "in_features": 53, "out_features": 35},
    "full_alt": {"batch_size": 2111, "in_features": 3999, "out_features": 4097},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Linear without bias, tanh, then a learnable (out_features,) bias, then a symmetric clamp."""

    def __init__(self, in_features: int, out_features: int, clamp_value: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.5)
        self.clamp_value = clamp_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.tanh(self.linear(x))
        x = x + self.bias
        return torch.clamp(x, -self.clamp_value, self.clamp_value)


def get_inputs():
    return [torch.randn(batch_size, in_features) * 2.0]


def get_init_inputs():
    return [in_features, out_features, clamp_value]
