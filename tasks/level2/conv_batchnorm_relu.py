"""The classic CNN block: Conv2d (valid, with bias) + BatchNorm2d (training mode) + ReLU."""
import torch
import torch.nn as nn

batch_size = 64
in_channels = 32
out_channels = 64
height = 128
width = 128
kernel_size = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 3, "out_channels": 8, "height": 16, "width": 16},
    "alt": {"batch_size": 3, "in_channels": 5, "out_channels": 7, "height": 19, "width": 17},
    "full_alt": {"batch_size": 60, "in_channels": 29, "out_channels": 61, "height": 131, "width": 117},
    "dtype": "float32",
}


class Model(nn.Module):
    """nn.Conv2d, then nn.BatchNorm2d over the channels, then ReLU.

    A fresh module is in training mode: BatchNorm normalises with the batch's own per-channel mean and biased
    variance over (N, H, W). Its affine parameters are re-initialised randomly so that ignoring them is caught.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.weight.copy_(1.0 + 0.5 * torch.randn(out_channels))
            self.bn.bias.copy_(0.5 * torch.randn(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = self.bn(x)
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
