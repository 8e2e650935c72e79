"""3-D UNet block: Conv3d (padding 1) + InstanceNorm3d (affine) + LeakyReLU(0.01)."""
import torch
import torch.nn as nn

batch_size = 16
in_channels = 8
out_channels = 16
depth = 32
height = 64
width = 64
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 2, "out_channels": 4, "depth": 6, "height": 8, "width": 8},
    "alt": {"batch_size": 3, "in_channels": 3, "out_channels": 5, "depth": 7, "height": 9, "width": 6},
    "full_alt": {"batch_size": 15, "in_channels": 7, "out_channels": 15, "depth": 33, "height": 61, "width": 67},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Conv3d with same padding, nn.InstanceNorm3d(affine=True), then leaky ReLU.

    The norm's affine parameters are re-initialised randomly so that a solution ignoring them is caught.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.norm = nn.InstanceNorm3d(out_channels, affine=True)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(out_channels))
            self.norm.bias.copy_(0.5 * torch.randn(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.conv(x))
        return torch.nn.functional.leaky_relu(x, negative_slope=0.01)


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
