"""y = tanh(LayerNorm(A @ B)): a batched matmul, LayerNorm over the last dim, tanh."""
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
    """torch.bmm, nn.LayerNorm(N) (with affine), then tanh.

    The norm's affine parameters are re-initialised randomly so that a solution ignoring them is caught.
    """

    def __init__(self, N: int):
        super().__init__()
        self.norm = nn.LayerNorm(N)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(N))
            self.norm.bias.copy_(0.5 * torch.randn(N))

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        x = torch.bmm(A, B)
        return torch.tanh(self.norm(x))


def get_inputs():
    return [torch.randn(batch_size, M, K), torch.randn(batch_size, K, N)]


def get_init_inputs():
    return [N]
