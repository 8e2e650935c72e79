"""One decode step of grouped-query attention over a KV cache.

One decode step of grouped-query attention with a KV cache: project the new token, rotate q and k to its
position, attend over the cached keys and values plus its own, output projection. Memory-bound on the cache."""
import torch
import torch.nn as nn

batch_size = 8
cache_len = 8192
d_model = 4096
n_heads = 32
n_kv_heads = 8
rope_base = 500000.0

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "cache_len": 40, "d_model": 64, "n_heads": 4, "n_kv_heads": 2},
    "alt": {"batch_size": 3, "cache_len": 53, "d_model": 96, "n_heads": 6, "n_kv_heads": 3},
    "full_alt": {"batch_size": 6, "cache_len": 10001, "d_model": 3072, "n_heads": 24, "n_kv_heads": 8},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _rotary_at(x: torch.Tensor, position: int, base: float) -> torch.Tensor:
    """Rotate the two halves of each head of x (..., head_dim) by the angles of one position."""
    d = x.shape[-1]
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    angles = position * inv_freq
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(nn.Module):
    """The new token x (batch, 1, d_model) sits at position cache_len. k_cache, v_cache (batch, n_kv_heads,
    cache_len, head_dim) hold the earlier positions' keys (already rotated) and values; they are read, not
    updated. out = W_o softmax(q [K; k]^T / sqrt(head_dim)) [V; v], query heads sharing kv heads in groups."""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, rope_base: float):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_model // n_heads
        self.rope_base = rope_base
        self.wq = nn.Linear(d_model, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, d_model, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        b, position = x.shape[0], k_cache.shape[2]
        q = self.wq(x).view(b, 1, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, 1, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, 1, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = _rotary_at(q, position, self.rope_base), _rotary_at(k, position, self.rope_base)
        keys = torch.cat([k_cache, k], dim=2)
        values = torch.cat([v_cache, v], dim=2)
        group = self.n_heads // self.n_kv_heads
        keys, values = keys.repeat_interleave(group, dim=1), values.repeat_interleave(group, dim=1)
        scores = torch.matmul(q, keys.transpose(-1, -2)) * self.head_dim ** -0.5  # (batch, heads, 1, position + 1)
        p = torch.softmax(_wide(scores), dim=-1).to(x.dtype)
        return self.wo(torch.matmul(p, values).transpose(1, 2).reshape(b, 1, -1))


def get_inputs():
    head_dim = d_model // n_heads
    return [torch.randn(batch_size, 1, d_model, dtype=torch.bfloat16),
            torch.randn(batch_size, n_kv_heads, cache_len, head_dim, dtype=torch.bfloat16),
            torch.randn(batch_size, n_kv_heads, cache_len, head_dim, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads, n_kv_heads, rope_base]
