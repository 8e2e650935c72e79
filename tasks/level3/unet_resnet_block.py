"""Diffusion U-Net residual block with a timestep embedding.

Diffusion U-Net residual block: GroupNorm, SiLU, 3x3 convolution, the timestep embedding added per channel,
GroupNorm, SiLU, 3x3 convolution, and a 1x1-projected skip connection."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8
in_channels = 320
out_channels = 640
height = 64
width = 64
temb_dim = 1280
groups = 32

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 16, "out_channels": 32, "height": 8, "width": 8, "temb_dim": 24,
            "groups": 4},
    "alt": {"batch_size": 3, "in_channels": 12, "out_channels": 18, "height": 9, "width": 7, "temb_dim": 20,
            "groups": 3},
    "full_alt": {"batch_size": 6, "in_channels": 640, "out_channels": 1280, "height": 48, "width": 40,
                 "temb_dim": 1280},
    "dtype": "bfloat16",
}


def _group_norm(c: int, groups: int) -> nn.GroupNorm:
    norm = nn.GroupNorm(groups, c)
    nn.init.normal_(norm.weight, 1.0, 0.1)
    nn.init.normal_(norm.bias, 0.0, 0.1)
    return norm


class Model(nn.Module):
    """h = conv1(silu(GN1 x)) + W_t silu(temb); h = conv2(silu(GN2 h)); out = skip(x) + h, skip a 1x1 convolution."""

    def __init__(self, in_channels: int, out_channels: int, temb_dim: int, groups: int):
        super().__init__()
        self.norm1 = _group_norm(in_channels, groups)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.temb = nn.Linear(temb_dim, out_channels)
        self.norm2 = _group_norm(out_channels, groups)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.skip = nn.Conv2d(in_channels, out_channels, 1)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width, dtype=torch.bfloat16),
            torch.randn(batch_size, temb_dim, dtype=torch.bfloat16)]


def get_init_inputs():
    return [in_channels, out_channels, temb_dim, groups]
