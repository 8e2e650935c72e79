"""EfficientNet MBConv block: expand, depthwise conv, squeeze-excitation, project, residual.

MobileNetV2 / EfficientNet inverted-residual block (inference): 1x1 expansion, 3x3 depthwise convolution,
squeeze-and-excitation, 1x1 projection, batch norms with running statistics, SiLU, residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 128
channels = 40
expansion = 6
height = 56
width = 56
se_ratio = 0.25

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "channels": 8, "height": 8, "width": 8},
    "alt": {"batch_size": 3, "channels": 6, "height": 9, "width": 7, "expansion": 4},
    "full_alt": {"batch_size": 96, "channels": 80, "height": 29, "width": 27},
    "dtype": "bfloat16",
}


class _BN(nn.Module):
    """Batch norm with (random) running statistics, as a trained network runs it."""

    def __init__(self, c: int):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(c))
        self.bias = nn.Parameter(0.1 * torch.randn(c))
        self.register_buffer("running_mean", 0.1 * torch.randn(c))
        self.register_buffer("running_var", 1 + 0.2 * torch.rand(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, training=False, eps=1e-3)


class Model(nn.Module):
    """h = silu(BN1 conv1x1_expand x); h = silu(BN2 dwconv3x3 h); h = h * sigmoid(W_e silu(W_r avgpool(h)));
    out = x + BN3 conv1x1_project h."""

    def __init__(self, channels: int, expansion: int, se_ratio: float):
        super().__init__()
        wide = channels * expansion
        squeezed = max(1, int(channels * se_ratio))
        self.expand = nn.Conv2d(channels, wide, 1, bias=False)
        self.bn1 = _BN(wide)
        self.depthwise = nn.Conv2d(wide, wide, 3, padding=1, groups=wide, bias=False)
        self.bn2 = _BN(wide)
        self.se_reduce = nn.Conv2d(wide, squeezed, 1)
        self.se_expand = nn.Conv2d(squeezed, wide, 1)
        self.project = nn.Conv2d(wide, channels, 1, bias=False)
        self.bn3 = _BN(channels)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.bn1(self.expand(x)))
        h = F.silu(self.bn2(self.depthwise(h)))
        s = torch.sigmoid(self.se_expand(F.silu(self.se_reduce(h.mean((2, 3), keepdim=True)))))
        return x + self.bn3(self.project(h * s))


def get_inputs():
    return [torch.randn(batch_size, channels, height, width, dtype=torch.bfloat16)]


def get_init_inputs():
    return [channels, expansion, se_ratio]
