"""Sub-pixel upsampling: Conv2d to C * r^2 channels (padding 1) + PixelShuffle(r) + GELU."""
import torch
import torch.nn as nn

batch_size = 32
in_channels = 32
out_channels = 16
height = 128
width = 128
kernel_size = 3
upscale = 2

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 3, "out_channels": 2, "height": 8, "width": 8},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 3, "height": 9, "width": 7},
    "full_alt": {"batch_size": 30, "in_channels": 29, "out_channels": 15, "height": 131, "width": 117},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Conv2d(in, out * r * r, k, padding=k // 2), nn.PixelShuffle(r), then exact GELU; output (N, out, H*r, W*r)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, upscale: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels * upscale * upscale, kernel_size, padding=kernel_size // 2)
        self.shuffle = nn.PixelShuffle(upscale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = self.shuffle(x)
        return torch.nn.functional.gelu(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, upscale]
