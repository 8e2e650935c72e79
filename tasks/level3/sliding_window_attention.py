"""Sliding-window grouped-query attention sublayer (Mistral-style).

Sliding-window grouped-query attention sublayer (Mistral-style): projections, rotary embedding, each query
attends to itself and the window-1 positions before it, output projection."""
import torch
import torch.nn as nn

batch_size = 1
seq_len = 4096
d_model = 1536
n_heads = 12
n_kv_heads = 4
window = 1024
rope_base = 10000.0

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 24, "d_model": 64, "n_heads": 4, "n_kv_heads": 2, "window": 8},
    "alt": {"batch_size": 1, "seq_len": 37, "d_model": 72, "n_heads": 6, "n_kv_heads": 2, "window": 11},
    "full_alt": {"batch_size": 1, "seq_len": 3000, "d_model": 2560, "n_heads": 20, "n_kv_heads": 4, "window": 700},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (softmax); a float32/float64 tensor stays as it is."""
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
    """W_o softmax(mask(q k^T / sqrt(head_dim))) v, where query i sees keys j with i - window < j <= i; n_heads
    query heads share n_kv_heads key/value heads; rotary embedding on q and k; softmax in float32."""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, window: int, rope_base: float):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_model // n_heads
        self.window, self.rope_base = window, rope_base
        self.wq = nn.Linear(d_model, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, d_model, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q = self.wq(x).view(b, n, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, n, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = _rotary(q, self.rope_base), _rotary(k, self.rope_base)
        group = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.head_dim ** -0.5
        pos = torch.arange(n, device=x.device)
        offset = pos[:, None] - pos[None, :]
        hidden = (offset < 0) | (offset >= self.window)
        p = torch.softmax(_wide(scores).masked_fill(hidden, float("-inf")), dim=-1).to(x.dtype)
        return self.wo(torch.matmul(p, v).transpose(1, 2).reshape(b, n, -1))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads, n_kv_heads, window, rope_base]
