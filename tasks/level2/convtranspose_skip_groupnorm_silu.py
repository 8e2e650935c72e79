"""UNet decoder step: ConvTranspose2d (2x upsampling) + skip connection + GroupNorm + SiLU."""
import torch
import torch.nn as nn

batch_size = 64
in_channels = 64
out_channels = 32
height = 64
width = 64
kernel_size = 4
num_groups = 8

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 4, "out_channels": 4, "height": 8, "width": 8, "num_groups": 2},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 6, "height": 9, "width": 7, "num_groups": 3},
    "full_alt": {"batch_size": 60, "in_channels": 61, "out_channels": 30, "height": 61, "width": 67, "num_groups": 5},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.ConvTranspose2d(k=4, stride 2, padding 1), plus a skip tensor of the output's shape, then
    nn.GroupNorm(num_groups, out_channels) (with affine), then SiLU.

    The norm's affine parameters are re-initialised randomly so that a solution ignoring them is caught.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, num_groups: int):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1)
        self.norm = nn.GroupNorm(num_groups, out_channels)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(out_channels))
            self.norm.bias.copy_(0.5 * torch.randn(out_channels))

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        x = self.conv(x) + skip
        x = self.norm(x)
        return torch.nn.functional.silu(x)


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    skip = torch.randn(batch_size, out_channels, 2 * height, 2 * width)
    return [x, skip]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
