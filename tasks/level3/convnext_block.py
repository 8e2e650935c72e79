"""ConvNeXt block: 7x7 depthwise conv, LayerNorm, GELU MLP, layer scale, residual.

ConvNeXt block: 7x7 depthwise convolution, LayerNorm over channels (channels-last), pointwise MLP with GELU to
four times the width and back, per-channel layer scale, residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 64
channels = 192
height = 56
width = 56

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 16, "height": 8, "width": 8},
    "alt": {"batch_size": 3, "channels": 12, "height": 9, "width": 7},
    "full_alt": {"batch_size": 48, "channels": 384, "height": 31, "width": 29},
    "dtype": "bfloat16",
}


class Model(nn.Module):
    """x + permute(gamma * W_2 gelu(W_1 LayerNorm(permute(dwconv7x7(x))))), the LayerNorm over channels."""

    def __init__(self, channels: int):
        super().__init__()
        self.dwconv = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = nn.LayerNorm(channels, eps=1e-6)
        nn.init.normal_(self.norm.weight, 1.0, 0.1)
        nn.init.normal_(self.norm.bias, 0.0, 0.1)
        self.fc1 = nn.Linear(channels, 4 * channels)
        self.fc2 = nn.Linear(4 * channels, channels)
        self.gamma = nn.Parameter(0.5 + 0.1 * torch.randn(channels))
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.dwconv(x).permute(0, 2, 3, 1)
        h = self.fc2(F.gelu(self.fc1(self.norm(h)))) * self.gamma
        return x + h.permute(0, 3, 1, 2)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width, dtype=torch.bfloat16)]


def get_init_inputs():
    return [channels]
