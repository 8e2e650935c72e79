"""Dense fp32 matrix multiplication C = A @ B with A of shape (M, K) and B of shape (K, N)."""
import torch
import torch.nn as nn

M = 4096
K = 4096
N = 4096

KERNEL_GYM = {
    "cpu": {"M": 64, "K": 64, "N": 64},
    "alt": {"M": 50, "K": 37, "N": 45},
    "full_alt": {"M": 3001, "K": 4999, "N": 3517},
    "dtype": "float32",
}


class Model(nn.Module):
    """Computes A @ B in full fp32 precision."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
