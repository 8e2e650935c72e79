"""Causal scaled dot-product attention, unfused: masked softmax(Q K^T / sqrt(d)) V."""
import torch
import torch.nn as nn

batch_heads = 32
seq_len = 2048
head_dim = 64

KERNEL_GYM = {
    "cpu": {"batch_heads": 2, "seq_len": 16, "head_dim": 8},
    "alt": {"batch_heads": 3, "seq_len": 19, "head_dim": 12},
    "full_alt": {"batch_heads": 30, "seq_len": 2001, "head_dim": 80},
    "dtype": "float32",
}


class Model(nn.Module):
    """Like level2/attention, but position i attends only to positions j <= i (the rest is masked to -inf)."""

    def __init__(self, head_dim: int):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.bmm(q, k.transpose(1, 2)) * self.scale
        n = scores.shape[-1]
        future = torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        return torch.bmm(p, v)


def get_inputs():
    return [torch.randn(batch_heads, seq_len, head_dim) for _ in range(3)]


def get_init_inputs():
    return [head_dim]
