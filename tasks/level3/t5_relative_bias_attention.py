"""T5 encoder self-attention with bucketed relative position bias.

T5 encoder self-attention sublayer: RMS-style LayerNorm, bidirectional attention with a learned relative-position
bias looked up by log-spaced distance buckets (no score scaling, as T5), output projection, residual."""
import math

import torch
import torch.nn as nn

batch_size = 2
seq_len = 2048
d_model = 1024
n_heads = 16
num_buckets = 32
max_distance = 128

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 24, "d_model": 32, "n_heads": 4, "num_buckets": 8, "max_distance": 16},
    "alt": {"batch_size": 1, "seq_len": 35, "d_model": 30, "n_heads": 3, "num_buckets": 10, "max_distance": 20},
    "full_alt": {"batch_size": 3, "seq_len": 1500, "d_model": 768, "n_heads": 12},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (norm statistics, softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _thresholds(num_buckets: int, max_distance: int) -> list[int]:
    """The distances at which the log-spaced buckets start: bucket exact + m from exact * (max_distance /
    exact)^(m / (half - exact)) on, rounded up (exact integers, so every device buckets alike)."""
    half = num_buckets // 2
    exact = half // 2
    return [math.ceil(exact * (max_distance / exact) ** (m / (half - exact)) - 1e-9) for m in range(1, half - exact)]


def _buckets(n: int, num_buckets: int, thresholds: list[int], device: torch.device) -> torch.Tensor:
    """(n, n) bucket of key j for query i: half the buckets per direction (j > i in the upper half); in each,
    one bucket per distance under a quarter of all buckets, then log-spaced buckets up to max_distance, the last
    one taking everything farther."""
    pos = torch.arange(n, device=device)
    rel = pos[None, :] - pos[:, None]
    half = num_buckets // 2
    exact = half // 2
    dist = rel.abs()
    far = exact + torch.bucketize(dist, torch.tensor(thresholds, device=device, dtype=dist.dtype), right=True)
    return (rel > 0).long() * half + torch.where(dist < exact, dist, far)


class Model(nn.Module):
    """x + W_o softmax(q k^T + bias[bucket(j - i)]) v with q, k, v from T5LayerNorm(x) = x / rms(x) * w; one bias per
    bucket and head; no 1/sqrt(head_dim) (T5 folds it into the weights); softmax in float32."""

    def __init__(self, d_model: int, n_heads: int, num_buckets: int, max_distance: int):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.num_buckets, self.thresholds = num_buckets, _thresholds(num_buckets, max_distance)
        self.norm = nn.Parameter(1 + 0.1 * torch.randn(d_model))
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        with torch.no_grad():
            self.wq.weight.mul_(self.head_dim ** -0.5)
        self.bias = nn.Embedding(num_buckets, n_heads)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        h = _wide(x)
        h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * self.norm
        q = self.wq(h).view(b, n, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, n, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, n, self.n_heads, self.head_dim).transpose(1, 2)
        bias = self.bias(_buckets(n, self.num_buckets, self.thresholds, x.device)).permute(2, 0, 1)
        scores = _wide(torch.matmul(q, k.transpose(-1, -2))) + _wide(bias)
        p = torch.softmax(scores, dim=-1).to(x.dtype)
        return x + self.wo(torch.matmul(p, v).transpose(1, 2).reshape(b, n, d))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads, num_buckets, max_distance]
