"""ResNet bottleneck block with a strided projection shortcut (inference batch norm).

ResNet bottleneck block with a downsampling projection shortcut (inference): 1x1, strided 3x3 and 1x1
convolutions, each followed by batch norm with running statistics, ReLUs, residual add."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 128
in_channels = 256
mid_channels = 128
out_channels = 512
height = 56
width = 56
stride = 2

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "in_channels": 16, "mid_channels": 8, "out_channels": 32, "height": 12, "width": 12},
    "alt": {"batch_size": 3, "in_channels": 12, "mid_channels": 6, "out_channels": 20, "height": 13, "width": 9},
    "full_alt": {"batch_size": 96, "in_channels": 512, "mid_channels": 256, "out_channels": 1024, "height": 29,
                 "width": 27},
    "dtype": "bfloat16",
}


def _batch_norm(c: int) -> nn.BatchNorm2d:
    """A batch norm with random affine parameters and running statistics, as a trained network has."""
    bn = nn.BatchNorm2d(c)
    nn.init.normal_(bn.weight, 1.0, 0.1)
    nn.init.normal_(bn.bias, 0.0, 0.1)
    bn.running_mean.normal_(0.0, 0.1)
    bn.running_var.uniform_(1.0, 1.2)
    return bn


def _infer(bn: nn.BatchNorm2d, x: torch.Tensor) -> torch.Tensor:
    """The batch norm as at inference (running statistics), whatever mode the module is in."""
    return F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias, training=False, eps=bn.eps)


class Model(nn.Module):
    """relu(BN3 conv1x1(relu(BN2 conv3x3_stride(relu(BN1 conv1x1 x)))) + BN_s conv1x1_stride x); convolutions
    without bias, batch norms with running statistics."""

    def __init__(self, in_channels: int, mid_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, mid_channels, 1, bias=False)
        self.bn1 = _batch_norm(mid_channels)
        self.conv2 = nn.Conv2d(mid_channels, mid_channels, 3, stride=stride, padding=1, bias=False)
        self.bn2 = _batch_norm(mid_channels)
        self.conv3 = nn.Conv2d(mid_channels, out_channels, 1, bias=False)
        self.bn3 = _batch_norm(out_channels)
        self.shortcut = nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False)
        self.bn_s = _batch_norm(out_channels)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(_infer(self.bn1, self.conv1(x)))
        h = torch.relu(_infer(self.bn2, self.conv2(h)))
        return torch.relu(_infer(self.bn3, self.conv3(h)) + _infer(self.bn_s, self.shortcut(x)))


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width, dtype=torch.bfloat16)]


def get_init_inputs():
    return [in_channels, mid_channels, out_channels, stride]
