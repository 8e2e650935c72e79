"""3-D tensor times matrix: C = A @ B with A (batch, M, K) and a shared B (K, N)."""
import torch
import torch.nn as nn

batch_size = 16
M = 1024
K = 2048
N = 2048

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "M": 16, "K": 32, "N": 16},
    "alt": {"batch_size": 3, "M": 13, "K": 29, "N": 21},
    "full_alt": {"batch_size": 15, "M": 1001, "K": 2001, "N": 1999},
    "dtype": "float32",
}


class Model(nn.Module):
    """Computes torch.matmul(A, B), B broadcast over the batch, in full fp32 precision."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(batch_size, M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
