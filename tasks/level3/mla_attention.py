"""Multi-head latent attention (DeepSeek-V2), causal prefill.

Multi-head latent attention (DeepSeek-V2 style), causal prefill: queries and keys/values through low-rank
latents with RMSNorm, a decoupled rotary part of the key shared by all heads, output projection."""
import torch
import torch.nn as nn

batch_size = 1
seq_len = 3072
d_model = 2048
n_heads = 16
q_rank = 1024
kv_rank = 512
nope_dim = 128
rope_dim = 64
v_dim = 128
rope_base = 10000.0

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 16, "d_model": 32, "n_heads": 2, "q_rank": 24, "kv_rank": 16,
            "nope_dim": 8, "rope_dim": 4, "v_dim": 8},
    "alt": {"batch_size": 1, "seq_len": 27, "d_model": 40, "n_heads": 3, "q_rank": 20, "kv_rank": 12,
            "nope_dim": 10, "rope_dim": 6, "v_dim": 6},
    "full_alt": {"batch_size": 2, "seq_len": 2000, "d_model": 2560, "n_heads": 20, "q_rank": 1536, "kv_rank": 512,
                 "nope_dim": 128, "rope_dim": 64, "v_dim": 128},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (norm statistics, softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    h = _wide(x)
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * weight


def _rotary(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate the two halves of the last dim of x (..., seq, dim) by position-dependent angles."""
    n, d = x.shape[-2], x.shape[-1]
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    angles = torch.outer(torch.arange(n, device=x.device, dtype=torch.float32), inv_freq)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(nn.Module):
    """q = W_uq RMSNorm(W_dq x) split per head into (q_nope, q_rope); [c, k_rope] = W_dkv x; (k_nope, v) = W_ukv
    RMSNorm(c) per head; k = [k_nope, rope(k_rope)] (k_rope shared by every head), q = [q_nope, rope(q_rope)];
    out = W_o causal_softmax(q k^T / sqrt(nope_dim + rope_dim)) v, softmax in float32."""

    def __init__(self, d_model: int, n_heads: int, q_rank: int, kv_rank: int, nope_dim: int, rope_dim: int,
                 v_dim: int, rope_base: float):
        super().__init__()
        self.n_heads, self.nope_dim, self.rope_dim, self.v_dim = n_heads, nope_dim, rope_dim, v_dim
        self.kv_rank, self.rope_base = kv_rank, rope_base
        self.wq_down = nn.Linear(d_model, q_rank, bias=False)
        self.q_norm = nn.Parameter(1 + 0.1 * torch.randn(q_rank))
        self.wq_up = nn.Linear(q_rank, n_heads * (nope_dim + rope_dim), bias=False)
        self.wkv_down = nn.Linear(d_model, kv_rank + rope_dim, bias=False)
        self.kv_norm = nn.Parameter(1 + 0.1 * torch.randn(kv_rank))
        self.wkv_up = nn.Linear(kv_rank, n_heads * (nope_dim + v_dim), bias=False)
        self.wo = nn.Linear(n_heads * v_dim, d_model, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        h = self.n_heads
        q = self.wq_up(_rms_norm(self.wq_down(x), self.q_norm)).view(b, n, h, -1).transpose(1, 2)
        q_nope, q_rope = q.split([self.nope_dim, self.rope_dim], dim=-1)
        latent, k_rope = self.wkv_down(x).split([self.kv_rank, self.rope_dim], dim=-1)
        kv = self.wkv_up(_rms_norm(latent, self.kv_norm)).view(b, n, h, -1).transpose(1, 2)
        k_nope, v = kv.split([self.nope_dim, self.v_dim], dim=-1)
        k_rope = _rotary(k_rope, self.rope_base)[:, None].expand(b, h, n, self.rope_dim)
        q = torch.cat([q_nope, _rotary(q_rope, self.rope_base)], dim=-1)
        k = torch.cat([k_nope, k_rope], dim=-1)
        scores = torch.matmul(q, k.transpose(-1, -2)) * (self.nope_dim + self.rope_dim) ** -0.5
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        p = torch.softmax(_wide(scores).masked_fill(future, float("-inf")), dim=-1).to(x.dtype)
        return self.wo(torch.matmul(p, v).transpose(1, 2).reshape(b, n, -1))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads, q_rank, kv_rank, nope_dim, rope_dim, v_dim, rope_base]
