"""y = relu(A @ B) * scale + bias: a batched matmul, ReLU, a constant, a learnable bias."""
import torch
import torch.nn as nn

batch_size = 128
M = 512
K = 1024
N = 512
scale = 0.25

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "M": 32, "K": 32, "N": 32},
    "alt": {"batch_size": 3, "M": 29, "K": 37, "N": 27},
    "full_alt": {"batch_size": 100, "M": 500, "K": 1111, "N": 499},
    "dtype": "float32",
}


class Model(nn.Module):
    """torch.bmm, ReLU, multiplication by a constant, then a learnable (N,) bias broadcast over rows."""

    def __init__(self, N: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(N) * 0.5)
        self.scale = scale

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        x = torch.relu(torch.bmm(A, B))
        return x * self.scale + self.bias


def get_inputs():
    return [torch.randn(batch_size, M, K), torch.randn(batch_size, K, N)]


def get_init_inputs():
    return [N, scale]
