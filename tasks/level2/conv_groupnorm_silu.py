"""Diffusion-UNet style block: Conv2d (padding 1) + GroupNorm + SiLU."""
import torch
import torch.nn as nn

batch_size = 64
in_channels = 32
out_channels = 64
height = 128
width = 128
kernel_size = 3
num_groups = 8

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 3, "out_channels": 8, "height": 16, "width": 16, "num_groups": 4},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 9, "height": 19, "width": 17, "num_groups": 3},
    "full_alt": {"batch_size": 60, "in_channels": 29, "out_channels": 60, "height": 131, "width": 117, "num_groups": 6},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Conv2d with same padding, nn.GroupNorm(num_groups, out_channels) (with affine), then SiLU.

    The norm's affine parameters are re-initialised randomly so that a solution ignoring them is caught.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, num_groups: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.norm = nn.GroupNorm(num_groups, out_channels)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(out_channels))
            self.norm.bias.copy_(0.5 * torch.randn(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = self.norm(x)
        return torch.nn.functional.silu(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
