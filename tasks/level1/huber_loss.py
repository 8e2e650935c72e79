"""Per-sample Huber loss (delta = 1.0), averaged over the feature dimension: shape (batch_size,)."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 12288
delta = 1.0

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 7001, "dim": 13001},
    "dtype": "float32",
}


class Model(nn.Module):
    """Huber loss per row: quadratic for |pred - target| < delta, linear beyond."""

    def __init__(self, delta: float):
        super().__init__()
        self.delta = delta

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.huber_loss(pred, target, reduction="none", delta=self.delta).mean(dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim) * 2.0, torch.randn(batch_size, dim)]


def get_init_inputs():
    return [delta]
