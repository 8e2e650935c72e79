"""RMSNorm over the last dimension of a 2-D fp32 tensor: x / sqrt(mean(x^2) + eps) * weight."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 16384

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 9001, "dim": 12007},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.RMSNorm(dim) with a learnable weight.

    The weight is re-initialised randomly (instead of ones) so that a solution that ignores it is caught.
    """

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=eps)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(batch_size, dim) * 3.0]


def get_init_inputs():
    return [dim]
