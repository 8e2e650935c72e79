"""fp32 GEMM with a transposed right operand: C = A @ B^T, A (M, K), B (N, K)."""
import torch
import torch.nn as nn

M = 3072
K = 4096
N = 5120

KERNEL_GYM = {
    "cpu": {"M": 48, "K": 64, "N": 40},
    "alt": {"M": 37, "K": 53, "N": 45},
    "full_alt": {"M": 2999, "K": 4001, "N": 4999},
    "dtype": "float32",
}


class Model(nn.Module):
    """Computes A @ B.T in full fp32 precision (B is stored row-major as (N, K))."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
