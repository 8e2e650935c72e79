"""Causal grouped-query attention with QK-norm and rotary embedding (Qwen3/OLMo-2).

Causal grouped-query attention with QK-norm (Qwen3 / OLMo-2 style): per-head RMSNorm of queries and keys before
the rotary embedding, causal softmax, output projection."""
import torch
import torch.nn as nn

batch_size = 1
seq_len = 2048
d_model = 4096
n_heads = 32
n_kv_heads = 8
head_dim = 128
rope_base = 1000000.0

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 16, "d_model": 32, "n_heads": 4, "n_kv_heads": 2, "head_dim": 8},
    "alt": {"batch_size": 1, "seq_len": 25, "d_model": 44, "n_heads": 6, "n_kv_heads": 3, "head_dim": 10},
    "full_alt": {"batch_size": 2, "seq_len": 1200, "d_model": 2560, "n_heads": 20, "n_kv_heads": 4,
                 "head_dim": 128},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (norm statistics, softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    h = _wide(x)
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * weight


def _rotary(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate the two halves of each head (x: batch, heads, seq, head_dim) by position-dependent angles."""
    n, d = x.shape[-2], x.shape[-1]
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    angles = torch.outer(torch.arange(n, device=x.device, dtype=torch.float32), inv_freq)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(nn.Module):
    """q = rope(RMSNorm_q(W_q x)), k = rope(RMSNorm_k(W_k x)) per head (norm weights of size head_dim), v = W_v x;
    out = W_o causal_softmax(q k^T / sqrt(head_dim)) v with kv heads shared by groups of query heads."""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, head_dim: int, rope_base: float):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim, self.rope_base = n_heads, n_kv_heads, head_dim, rope_base
        self.wq = nn.Linear(d_model, n_heads * head_dim, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * head_dim, bias=False)
        self.wo = nn.Linear(n_heads * head_dim, d_model, bias=False)
        self.q_norm = nn.Parameter(1 + 0.1 * torch.randn(head_dim))
        self.k_norm = nn.Parameter(1 + 0.1 * torch.randn(head_dim))
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q = _rms_norm(self.wq(x).view(b, n, self.n_heads, self.head_dim), self.q_norm).transpose(1, 2)
        k = _rms_norm(self.wk(x).view(b, n, self.n_kv_heads, self.head_dim), self.k_norm).transpose(1, 2)
        v = self.wv(x).view(b, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = _rotary(q, self.rope_base), _rotary(k, self.rope_base)
        group = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.head_dim ** -0.5
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        p = torch.softmax(_wide(scores).masked_fill(future, float("-inf")), dim=-1).to(x.dtype)
        return self.wo(torch.matmul(p, v).transpose(1, 2).reshape(b, n, -1))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads, n_kv_heads, head_dim, rope_base]
