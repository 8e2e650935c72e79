"""Gemma-2 style attention: logit soft-capping, local window, post-attention RMSNorm.

Gemma-2 style attention sublayer: grouped-query attention with rotary embedding, tanh soft-capping of the scores,
causal local (sliding-window) mask, output projection, post-attention RMSNorm and residual."""
import torch
import torch.nn as nn

batch_size = 1
seq_len = 4096
d_model = 2304
n_heads = 8
n_kv_heads = 4
head_dim = 256
window = 2048
softcap = 50.0
rope_base = 10000.0

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 20, "d_model": 32, "n_heads": 4, "n_kv_heads": 2, "head_dim": 8,
            "window": 12},
    "alt": {"batch_size": 1, "seq_len": 31, "d_model": 36, "n_heads": 6, "n_kv_heads": 2, "head_dim": 10,
            "window": 9},
    "full_alt": {"batch_size": 1, "seq_len": 2500, "d_model": 3584, "n_heads": 16, "n_kv_heads": 8,
                 "head_dim": 128, "window": 1000},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (capped scores, softmax, norm); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _rotary(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate the two halves of each head (x: batch, heads, seq, head_dim) by position-dependent angles."""
    n, d = x.shape[-2], x.shape[-1]
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    angles = torch.outer(torch.arange(n, device=x.device, dtype=torch.float32), inv_freq)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(nn.Module):
    """s = softcap * tanh(q k^T / (sqrt(head_dim) softcap)) in float32; key j visible to query i when
    i - window < j <= i; out = x + RMSNorm(W_o softmax(s) v) with a (1 + w) norm weight (Gemma's)."""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, head_dim: int, window: int, softcap: float,
                 rope_base: float):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, head_dim
        self.window, self.softcap, self.rope_base = window, softcap, rope_base
        self.wq = nn.Linear(d_model, n_heads * head_dim, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * head_dim, bias=False)
        self.wo = nn.Linear(n_heads * head_dim, d_model, bias=False)
        self.post_norm = nn.Parameter(0.1 * torch.randn(d_model))
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q = self.wq(x).view(b, n, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = _rotary(q, self.rope_base), _rotary(k, self.rope_base)
        group = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = _wide(torch.matmul(q, k.transpose(-1, -2))) * self.head_dim ** -0.5
        scores = torch.tanh(scores / self.softcap) * self.softcap
        pos = torch.arange(n, device=x.device)
        offset = pos[:, None] - pos[None, :]
        scores = scores.masked_fill((offset < 0) | (offset >= self.window), float("-inf"))
        p = torch.softmax(scores, dim=-1).to(x.dtype)
        o = _wide(self.wo(torch.matmul(p, v).transpose(1, 2).reshape(b, n, -1)))
        o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + _wide(self.post_norm))
        return x + o.to(x.dtype)


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads, n_kv_heads, head_dim, window, softcap, rope_base]
