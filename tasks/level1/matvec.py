"""fp32 matrix-vector product y = A @ x, A of shape (M, K), x of shape (K, 1)."""
import torch
import torch.nn as nn

M = 16384
K = 12288

KERNEL_GYM = {
    "cpu": {"M": 64, "K": 64},
    "alt": {"M": 61, "K": 45},
    "full_alt": {"M": 15001, "K": 12007},
    "dtype": "float32",
}


class Model(nn.Module):
    """Computes A @ x (memory-bound: A is read once)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, x)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
