"""RetNet multi-scale retention, parallel form.

RetNet multi-scale retention, parallel form: rotary q and k, causal attention weights replaced by a per-head
exponential decay gamma^(i-j) (no softmax), per-head group norm of the result, SiLU gate, output projection."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
seq_len = 2048
d_model = 2048
n_heads = 8
rope_base = 10000.0

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 16, "d_model": 32, "n_heads": 2},
    "alt": {"batch_size": 1, "seq_len": 27, "d_model": 36, "n_heads": 3},
    "full_alt": {"batch_size": 3, "seq_len": 1300, "d_model": 2560, "n_heads": 10},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (decay mask, norm statistics); a float32/float64 tensor stays as it is."""
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
    """Per head h with gamma_h = 1 - 2^(-5 - h): D[i, j] = gamma_h^(i - j) for j <= i else 0, rows scaled to sum 1;
    R = (rope(q) rope(k)^T / sqrt(head_dim) * D) v; R normalised per head (zero mean, unit variance, float32) times
    a per-channel weight; out = W_o(R * silu(W_g x))."""

    def __init__(self, d_model: int, n_heads: int, rope_base: float):
        super().__init__()
        self.n_heads, self.head_dim, self.rope_base = n_heads, d_model // n_heads, rope_base
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)
        self.wg = nn.Linear(d_model, d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.norm = nn.Parameter(1 + 0.1 * torch.randn(d_model))
        self.log_gamma = [math.log(1 - 2.0 ** (-5 - h)) for h in range(n_heads)]
        self.to(torch.bfloat16)

    def decay(self, n: int, x: torch.Tensor) -> torch.Tensor:
        log_gamma = torch.tensor(self.log_gamma, device=x.device, dtype=_wide(x).dtype)
        pos = torch.arange(n, device=x.device, dtype=log_gamma.dtype)
        distance = pos[:, None] - pos[None, :]
        d = torch.exp(log_gamma[:, None, None] * distance).masked_fill(distance < 0, 0.0)
        return d / d.sum(-1, keepdim=True).sqrt()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, dm = x.shape
        shape = (b, n, self.n_heads, self.head_dim)
        q = _rotary(self.wq(x).view(shape).transpose(1, 2), self.rope_base)
        k = _rotary(self.wk(x).view(shape).transpose(1, 2), self.rope_base)
        v = self.wv(x).view(shape).transpose(1, 2)
        scores = _wide(torch.matmul(q, k.transpose(-1, -2))) * self.head_dim ** -0.5
        r = torch.matmul((scores * self.decay(n, x)).to(x.dtype), v)  # (batch, heads, seq, head_dim)
        r = _wide(r)
        r = (r - r.mean(-1, keepdim=True)) * torch.rsqrt(r.var(-1, unbiased=False, keepdim=True) + 1e-5)
        r = r.to(x.dtype).transpose(1, 2).reshape(b, n, dm) * self.norm
        return self.wo(r * F.silu(self.wg(x)))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads, rope_base]
