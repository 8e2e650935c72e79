"""nn.LayerNorm over the last dimension (with elementwise affine) of a 2-D fp32 tensor."""
import torch
import torch.nn as nn

batch_size = 8192
dim = 8192

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "full_alt": {"batch_size": 6007, "dim": 9001},
    "dtype": "float32",
}


class Model(nn.Module):
    """LayerNorm(dim) with learnable weight and bias.

    The affine parameters are re-initialised randomly (instead of the default
    ones/zeros) so that a solution that ignores them is caught.
    """

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=eps, elementwise_affine=True)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.5 * torch.randn(dim))
            self.ln.bias.copy_(0.5 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    # non-zero mean and non-unit variance so the normalisation matters
    return [torch.randn(batch_size, dim) * 3.0 + 1.5]


def get_init_inputs():
    return [dim]
