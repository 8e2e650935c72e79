"""Tall-skinny fp32 GEMM C = A @ B, A of shape (M, K) with M >> N, B of shape (K, N)."""
import torch
import torch.nn as nn

M = 32768
K = 4096
N = 128

KERNEL_GYM = {
    "cpu": {"M": 64, "K": 32, "N": 16},
    "alt": {"M": 57, "K": 29, "N": 13},
    "full_alt": {"M": 30011, "K": 3999, "N": 111},
    "dtype": "float32",
}


class Model(nn.Module):
    """Computes A @ B in full fp32 precision; the output has few columns."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
