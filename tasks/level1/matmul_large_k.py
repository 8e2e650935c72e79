"""fp32 GEMM with a long reduction: C = A @ B, A (M, K), B (K, N), K >> M, N."""
import torch
import torch.nn as nn

M = 1024
K = 65536
N = 1024

KERNEL_GYM = {
    "cpu": {"M": 16, "K": 256, "N": 16},
    "alt": {"M": 13, "K": 301, "N": 17},
    "full_alt": {"M": 1000, "K": 60007, "N": 999},
    "dtype": "float32",
}


class Model(nn.Module):
    """Computes A @ B in full fp32 precision; K is much larger than M and N (split-K territory)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
