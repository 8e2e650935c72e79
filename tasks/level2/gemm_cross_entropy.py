"""Classifier head with its loss: per-sample cross-entropy of x @ W^T + b against soft targets."""
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
    """nn.Linear to class logits, log_softmax over the classes, then -sum_j target_ij * logp_ij per row.

    Output: one loss per sample, shape (batch_size,).
    """

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        logp = torch.log_softmax(self.linear(x), dim=1)
        return -(target * logp).sum(dim=1)


def get_inputs():
    x = torch.randn(batch_size, in_features) * 2.0
    target = torch.softmax(torch.randn(batch_size, out_features) * 2.0, dim=1)
    return [x, target]


def get_init_inputs():
    return [in_features, out_features]
