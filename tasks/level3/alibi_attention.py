"""Causal self-attention with ALiBi position biases (MPT/BLOOM), pre-norm, with residual.

Pre-norm causal self-attention with ALiBi (MPT/BLOOM style): LayerNorm, fused QKV projection, a per-head linear
distance penalty added to the scores instead of position embeddings, output projection, residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 1
seq_len = 2048
d_model = 4096
n_heads = 32

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 16, "d_model": 32, "n_heads": 4},
    "alt": {"batch_size": 1, "seq_len": 29, "d_model": 60, "n_heads": 5},
    "full_alt": {"batch_size": 2, "seq_len": 1500, "d_model": 3072, "n_heads": 24},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (scores with the bias, softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """x + W_o causal_softmax(q k^T / sqrt(head_dim) - m_h (i - j)) v, with slopes m_h = 2^(-8 (h + 1) / n_heads)
    and q, k, v = split(W_qkv LayerNorm(x)); scores, bias and softmax in float32."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.norm = nn.LayerNorm(d_model)
        nn.init.normal_(self.norm.weight, 1.0, 0.1)
        nn.init.normal_(self.norm.bias, 0.0, 0.1)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        h = F.layer_norm(x, (d,), self.norm.weight, self.norm.bias, 1e-5)
        q, k, v = self.qkv(h).view(b, n, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = _wide(torch.matmul(q, k.transpose(-1, -2))) * self.head_dim ** -0.5
        slopes = 2.0 ** (-8.0 * torch.arange(1, self.n_heads + 1, device=x.device, dtype=scores.dtype)
                         / self.n_heads)
        pos = torch.arange(n, device=x.device, dtype=scores.dtype)
        distance = pos[:, None] - pos[None, :]  # i - j, negative above the diagonal
        scores = scores - slopes[:, None, None] * distance
        scores = scores.masked_fill(distance < 0, float("-inf"))
        p = torch.softmax(scores, dim=-1).to(x.dtype)
        return x + self.wo(torch.matmul(p, v).transpose(1, 2).reshape(b, n, d))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads]
