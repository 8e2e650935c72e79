"""nn.Linear: y = x @ W^T + b with a (batch_size, in_features) fp32 input."""
import torch
import torch.nn as nn

batch_size = 4096
in_features = 4096
out_features = 4096

KERNEL_GYM = {
    "cpu": {"batch_size": 32, "in_features": 64, "out_features": 48},
    "alt": {"batch_size": 41, "in_features": 53, "out_features": 35},
    "full_alt": {"batch_size": 3999, "in_features": 4001, "out_features": 4097},
    "dtype": "float32",
}


class Model(nn.Module):
    """A fully connected layer with bias, in full fp32 precision."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
