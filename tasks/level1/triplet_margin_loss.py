"""Per-sample triplet margin loss: max(||a - p||_2 - ||a - n||_2 + margin, 0)."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 8192
margin = 4.0

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 7001, "dim": 9001},
    "dtype": "float32",
}


class Model(nn.Module):
    """Triplet margin loss (p = 2, eps = 1e-6) for every row, reduction='none'."""

    def __init__(self, margin: float):
        super().__init__()
        self.margin = margin

    def forward(self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.triplet_margin_loss(anchor, positive, negative, margin=self.margin, reduction="none")


def get_inputs():
    # margin ~ the typical distance difference, so some rows are clamped to 0 and some are not
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [margin]
