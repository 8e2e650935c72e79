"""nn.ConvTranspose2d, 4x4, stride 2, padding 1, with bias (2x upsampling), NCHW fp32."""
import torch
import torch.nn as nn

batch_size = 16
in_channels = 64
out_channels = 32
height = 128
width = 128
kernel_size = 4

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 4, "out_channels": 3, "height": 8, "width": 8},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 2, "height": 9, "width": 7},
    "full_alt": {"batch_size": 15, "in_channels": 61, "out_channels": 29, "height": 121, "width": 133},
    "dtype": "float32",
}


class Model(nn.Module):
    """A transposed convolution doubling height and width."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
