"""LayerNorm, GEMM with bias and tanh-GELU: a transformer MLP's up-projection.

Transformer MLP up-projection: LayerNorm, then a GEMM with bias to four times the width, then tanh-GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 8192
d_model = 4096
hidden_dim = 16384

KERNEL_GYM = {
    "cpu": {"num_tokens": 32, "d_model": 64, "hidden_dim": 128},
    "alt": {"num_tokens": 41, "d_model": 72, "hidden_dim": 100},
    "full_alt": {"num_tokens": 6001, "d_model": 3000, "hidden_dim": 12007},
    "dtype": "bfloat16",
}


class Model(nn.Module):
    """gelu_tanh(LayerNorm(x) W^T + b), the LayerNorm with its own affine weight and bias."""

    def __init__(self, d_model: int, hidden_dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        nn.init.normal_(self.norm.weight, 1.0, 0.1)
        nn.init.normal_(self.norm.bias, 0.0, 0.1)
        self.fc = nn.Linear(d_model, hidden_dim)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.fc(self.norm(x)), approximate="tanh")


def get_inputs():
    return [torch.randn(num_tokens, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, hidden_dim]
