"""Diffusion U-Net / VAE spatial self-attention block.

Diffusion U-Net / VAE spatial self-attention block: GroupNorm, one-head attention over all pixels of the
feature map (1x1 projections for q, k, v), output projection, residual."""
import torch
import torch.nn as nn

batch_size = 4
channels = 512
height = 64
width = 64
groups = 32

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 16, "height": 6, "width": 6, "groups": 4},
    "alt": {"batch_size": 3, "channels": 12, "height": 7, "width": 5, "groups": 3},
    "full_alt": {"batch_size": 2, "channels": 512, "height": 80, "width": 72},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """h = GN(x) as (batch, pixels, channels); out = x + W_o softmax(q k^T / sqrt(channels)) v, q/k/v = W h + b."""

    def __init__(self, channels: int, groups: int):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)
        nn.init.normal_(self.norm.weight, 1.0, 0.1)
        nn.init.normal_(self.norm.bias, 0.0, 0.1)
        self.q = nn.Linear(channels, channels)
        self.k = nn.Linear(channels, channels)
        self.v = nn.Linear(channels, channels)
        self.out = nn.Linear(channels, channels)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, hgt, wid = x.shape
        h = self.norm(x).flatten(2).transpose(1, 2)  # (batch, pixels, channels)
        scores = torch.matmul(self.q(h), self.k(h).transpose(1, 2)) * c ** -0.5
        p = torch.softmax(_wide(scores), dim=-1).to(x.dtype)
        o = self.out(torch.matmul(p, self.v(h)))
        return x + o.transpose(1, 2).reshape(b, c, hgt, wid)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width, dtype=torch.bfloat16)]


def get_init_inputs():
    return [channels, groups]
