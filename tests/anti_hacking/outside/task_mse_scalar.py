"""KernelBench-style MSE loss (level 1, problem 94's shape): one scalar, torch.mean over every squared difference."""
import torch
import torch.nn as nn

batch_size = 4096
dim = 4096

KERNEL_GYM = {
    "cpu": {"batch_size": 32, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 3001, "dim": 4001},
    "dtype": "float32",
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
