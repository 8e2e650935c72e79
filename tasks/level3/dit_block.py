"""Diffusion transformer (DiT) block with adaLN-Zero conditioning.

Diffusion transformer (DiT) block with adaLN-Zero conditioning: the conditioning vector gives per-sample shift,
scale and gate for the attention and MLP branches around parameter-free LayerNorms."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8
num_patches = 1024
d_model = 1152
n_heads = 16

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "num_patches": 16, "d_model": 32, "n_heads": 4},
    "alt": {"batch_size": 3, "num_patches": 25, "d_model": 36, "n_heads": 3},
    "full_alt": {"batch_size": 12, "num_patches": 729, "d_model": 1024, "n_heads": 16},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """(shift1, scale1, gate1, shift2, scale2, gate2) = W_ada silu(c) + b; h = x + gate1 * MHSA(LN(x) (1 + scale1)
    + shift1); out = h + gate2 * MLP(LN(h) (1 + scale2) + shift2), MLP = W_2 gelu_tanh(W_1 .); LN without affine."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.ada = nn.Linear(d_model, 6 * d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.fc1 = nn.Linear(d_model, 4 * d_model)
        self.fc2 = nn.Linear(4 * d_model, d_model)
        self.to(torch.bfloat16)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.head_dim ** -0.5
        p = torch.softmax(_wide(scores), dim=-1).to(x.dtype)
        return self.proj(torch.matmul(p, v).transpose(1, 2).reshape(b, n, d))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        shift1, scale1, gate1, shift2, scale2, gate2 = self.ada(F.silu(c))[:, None].chunk(6, dim=-1)
        h = F.layer_norm(x, (d,), eps=1e-6) * (1 + scale1) + shift1
        x = x + gate1 * self.attention(h)
        h = F.layer_norm(x, (d,), eps=1e-6) * (1 + scale2) + shift2
        return x + gate2 * self.fc2(F.gelu(self.fc1(h), approximate="tanh"))


def get_inputs():
    return [torch.randn(batch_size, num_patches, d_model, dtype=torch.bfloat16),
            torch.randn(batch_size, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads]
