"""nn.BatchNorm2d in training mode (batch statistics) on an NCHW fp32 tensor."""
import torch
import torch.nn as nn

batch_size = 64
channels = 128
height = 128
width = 128

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 4, "height": 8, "width": 8},
    "alt": {"batch_size": 3, "channels": 5, "height": 7, "width": 9},
    "full_alt": {"batch_size": 60, "channels": 120, "height": 131, "width": 117},
    "dtype": "float32",
}


class Model(nn.Module):
    """BatchNorm2d(channels) with learnable affine parameters, in training mode.

    A freshly built module is in training mode, so the forward normalises with the batch's own per-channel
    mean and biased variance over (N, H, W) (and updates the running statistics, which the output does not
    depend on). The affine parameters are re-initialised randomly so that ignoring them is caught.
    """

    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn.weight.copy_(1.0 + 0.5 * torch.randn(channels))
            self.bn.bias.copy_(0.5 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width) * 2.0 + 1.0]


def get_init_inputs():
    return [channels]
