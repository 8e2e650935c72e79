"""Llama-style decoder layer: RMSNorm, rotary GQA causal attention, SwiGLU MLP, residuals.

Pre-norm decoder layer of a Llama-style model: RMSNorm, rotary embedding, grouped-query causal attention,
SwiGLU MLP and two residual adds."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 1
seq_len = 2048
d_model = 4096
n_heads = 32
n_kv_heads = 8
ffn_dim = 14336
rope_base = 500000.0

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 16, "d_model": 64, "n_heads": 4, "n_kv_heads": 2, "ffn_dim": 96},
    "alt": {"batch_size": 1, "seq_len": 23, "d_model": 96, "n_heads": 6, "n_kv_heads": 3, "ffn_dim": 136},
    "full_alt": {"batch_size": 3, "seq_len": 1000, "d_model": 3072, "n_heads": 24, "n_kv_heads": 8, "ffn_dim": 8200},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (norm statistics, softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    h = _wide(x)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return h.to(x.dtype) * weight


def _rotary(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate the two halves of each head (x: batch, heads, seq, head_dim) by position-dependent angles."""
    n, d = x.shape[-2], x.shape[-1]
    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    angles = torch.outer(torch.arange(n, device=x.device, dtype=torch.float32), inv_freq)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(nn.Module):
    """x + Attn(RMSNorm(x)), then h + W_down(silu(W_gate m) * W_up m) with m = RMSNorm(h). Attention: n_heads query
    heads share n_kv_heads key/value heads, rotary embedding on q and k, causal mask, softmax in float32."""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, ffn_dim: int, rope_base: float):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_model // n_heads
        self.rope_base, self.eps = rope_base, 1e-5
        self.attn_norm = nn.Parameter(1 + 0.1 * torch.randn(d_model))
        self.wq = nn.Linear(d_model, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, d_model, bias=False)
        self.mlp_norm = nn.Parameter(1 + 0.1 * torch.randn(d_model))
        self.w_gate = nn.Linear(d_model, ffn_dim, bias=False)
        self.w_up = nn.Linear(d_model, ffn_dim, bias=False)
        self.w_down = nn.Linear(ffn_dim, d_model, bias=False)
        self.to(torch.bfloat16)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q = self.wq(x).view(b, n, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = _rotary(q, self.rope_base), _rotary(k, self.rope_base)
        group = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.head_dim ** -0.5
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        p = torch.softmax(_wide(scores).masked_fill(future, float("-inf")), dim=-1).to(x.dtype)
        out = torch.matmul(p, v).transpose(1, 2).reshape(b, n, -1)
        return self.wo(out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(_rms_norm(x, self.attn_norm, self.eps))
        m = _rms_norm(h, self.mlp_norm, self.eps)
        return h + self.w_down(F.silu(self.w_gate(m)) * self.w_up(m))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads, n_kv_heads, ffn_dim, rope_base]
