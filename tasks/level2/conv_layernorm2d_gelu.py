"""ConvNeXt-style downsampling: Conv2d (stride 2) + LayerNorm over channels (NHWC) + GELU."""
import torch
import torch.nn as nn

batch_size = 64
in_channels = 32
out_channels = 128
height = 256
width = 256
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 3, "out_channels": 8, "height": 16, "width": 16},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 7, "height": 19, "width": 17},
    "full_alt": {"batch_size": 60, "in_channels": 29, "out_channels": 125, "height": 251, "width": 263},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Conv2d(k, stride 2, padding k // 2), then nn.LayerNorm(out_channels) applied to every pixel's channel
    vector (permute to NHWC and back), then exact GELU. Output NCHW.

    The norm's affine parameters are re-initialised randomly so that a solution ignoring them is caught.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=2, padding=kernel_size // 2)
        self.norm = nn.LayerNorm(out_channels)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(out_channels))
            self.norm.bias.copy_(0.5 * torch.randn(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return torch.nn.functional.gelu(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
