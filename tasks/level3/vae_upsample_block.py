"""Latent-diffusion VAE decoder up block: residual block, 2x upsampling, convolution.

Latent-diffusion VAE decoder up block: a residual block (GroupNorm, SiLU, 3x3 convolution, twice), nearest 2x
upsampling, 3x3 convolution."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
channels = 256
height = 128
width = 128
groups = 32

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 8, "height": 6, "width": 6, "groups": 4},
    "alt": {"batch_size": 3, "channels": 6, "height": 7, "width": 5, "groups": 3},
    "full_alt": {"batch_size": 2, "channels": 512, "height": 96, "width": 80},
    "dtype": "bfloat16",
}


def _group_norm(c: int, groups: int) -> nn.GroupNorm:
    norm = nn.GroupNorm(groups, c, eps=1e-6)
    nn.init.normal_(norm.weight, 1.0, 0.1)
    nn.init.normal_(norm.bias, 0.0, 0.1)
    return norm


class Model(nn.Module):
    """h = x + conv2(silu(GN2 conv1(silu(GN1 x)))); out = conv_up(nearest_upsample_2x(h))."""

    def __init__(self, channels: int, groups: int):
        super().__init__()
        self.norm1, self.norm2 = _group_norm(channels, groups), _group_norm(channels, groups)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv_up = nn.Conv2d(channels, channels, 3, padding=1)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = x + self.conv2(F.silu(self.norm2(h)))
        return self.conv_up(F.interpolate(h, scale_factor=2.0, mode="nearest"))


def get_inputs():
    return [torch.randn(batch_size, channels, height, width, dtype=torch.bfloat16)]


def get_init_inputs():
    return [channels, groups]
