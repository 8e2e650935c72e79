"""Per-sample hinge loss with +-1 labels: loss_i = mean_j max(0, 1 - pred_ij * label_ij)."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 12288

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 7001, "dim": 13001},
    "dtype": "float32",
}


class Model(nn.Module):
    """Mean hinge loss per row."""

    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
        return torch.clamp(1.0 - pred * label, min=0.0).mean(dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim), torch.sign(torch.randn(batch_size, dim))]


def get_init_inputs():
    return []
