"""nn.GroupNorm (num_groups groups, with affine parameters) on an NCHW fp32 tensor."""
import torch
import torch.nn as nn

batch_size = 64
channels = 128
height = 128
width = 128
num_groups = 8

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 4, "height": 8, "width": 8, "num_groups": 2},
    "alt": {"batch_size": 3, "channels": 6, "height": 7, "width": 9, "num_groups": 3},
    "full_alt": {"batch_size": 60, "channels": 120, "height": 131, "width": 117, "num_groups": 12},
    "dtype": "float32",
}


class Model(nn.Module):
    """GroupNorm(num_groups, channels): statistics over each group of channels and all of H, W.

    The affine parameters are re-initialised randomly so that ignoring them is caught.
    """

    def __init__(self, num_groups: int, channels: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, channels)
        with torch.no_grad():
            self.gn.weight.copy_(1.0 + 0.5 * torch.randn(channels))
            self.gn.bias.copy_(0.5 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width) * 2.0 + 1.0]


def get_init_inputs():
    return [num_groups, channels]
