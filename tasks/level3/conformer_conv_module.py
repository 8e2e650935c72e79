"""Conformer convolution module: LayerNorm, pointwise conv + GLU, depthwise conv, BN, SiLU.

Conformer convolution module (speech encoders): LayerNorm, pointwise convolution to twice the width with a GLU,
depthwise 1-D convolution over time, batch norm with running statistics, SiLU, pointwise convolution, residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 32
seq_len = 2048
d_model = 512
kernel_size = 31

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 24, "d_model": 16, "kernel_size": 7},
    "alt": {"batch_size": 3, "seq_len": 29, "d_model": 12, "kernel_size": 5},
    "full_alt": {"batch_size": 24, "seq_len": 1500, "d_model": 640},
    "dtype": "bfloat16",
}


class Model(nn.Module):
    """x (batch, time, d) -> x + W_2(silu(BN(dwconv_time(glu(W_1 LayerNorm(x)))))), same-length 'same' padding."""

    def __init__(self, d_model: int, kernel_size: int):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        nn.init.normal_(self.norm.weight, 1.0, 0.1)
        nn.init.normal_(self.norm.bias, 0.0, 0.1)
        self.pointwise1 = nn.Conv1d(d_model, 2 * d_model, 1)
        self.depthwise = nn.Conv1d(d_model, d_model, kernel_size, padding=kernel_size // 2, groups=d_model)
        self.bn_weight = nn.Parameter(1 + 0.1 * torch.randn(d_model))
        self.bn_bias = nn.Parameter(0.1 * torch.randn(d_model))
        self.register_buffer("running_mean", 0.1 * torch.randn(d_model))
        self.register_buffer("running_var", 1 + 0.2 * torch.rand(d_model))
        self.pointwise2 = nn.Conv1d(d_model, d_model, 1)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x).transpose(1, 2)  # (batch, d, time)
        h = F.glu(self.pointwise1(h), dim=1)
        h = F.batch_norm(self.depthwise(h), self.running_mean, self.running_var, self.bn_weight, self.bn_bias,
                         training=False, eps=1e-5)
        h = self.pointwise2(F.silu(h))
        return x + h.transpose(1, 2)


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, kernel_size]
