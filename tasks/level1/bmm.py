"""Batched fp32 matrix multiplication C[b] = A[b] @ B[b], A (batch, M, K), B (batch, K, N)."""
import torch
import torch.nn as nn

batch_size = 128
M = 512
K = 1024
N = 512

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "M": 32, "K": 32, "N": 32},
    "alt": {"batch_size": 3, "M": 29, "K": 37, "N": 27},
    "full_alt": {"batch_size": 100, "M": 500, "K": 1111, "N": 499},
    "dtype": "float32",
}


class Model(nn.Module):
    """Computes torch.bmm(A, B) in full fp32 precision."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(batch_size, M, K), torch.randn(batch_size, K, N)]


def get_init_inputs():
    return []
