"""Elementwise softplus: y = log(1 + exp(beta x)) / beta, linear above the threshold."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 16384
beta = 2.0
threshold = 10.0

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 9001, "dim": 12007},
    "dtype": "float32",
}


class Model(nn.Module):
    """Applies softplus with constant beta and threshold."""

    def __init__(self, beta: float, threshold: float):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.softplus(x, beta=self.beta, threshold=self.threshold)


def get_inputs():
    # some entries cross beta * x > threshold, where softplus is the identity
    return [torch.randn(batch_size, dim) * 4.0]


def get_init_inputs():
    return [beta, threshold]
