"""MLP block: Linear + BatchNorm1d (training mode, batch statistics) + ReLU."""
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
    """nn.Linear, then nn.BatchNorm1d over the features, then ReLU.

    A fresh module is in training mode: BatchNorm normalises with the batch's own per-feature mean and biased
    variance. Its affine parameters are re-initialised randomly so that ignoring them is caught.
    """

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)
        with torch.no_grad():
            self.bn.weight.copy_(1.0 + 0.5 * torch.randn(out_features))
            self.bn.bias.copy_(0.5 * torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = self.bn(x)
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
