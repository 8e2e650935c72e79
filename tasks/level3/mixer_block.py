"""MLP-Mixer block: token-mixing and channel-mixing MLPs with residuals.

MLP-Mixer block: LayerNorm, token-mixing MLP across patches (on the transposed tokens), residual, LayerNorm,
channel-mixing MLP, residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 256
num_patches = 196
channels = 768
token_dim = 384
channel_dim = 3072

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "num_patches": 16, "channels": 32, "token_dim": 24, "channel_dim": 64},
    "alt": {"batch_size": 3, "num_patches": 25, "channels": 36, "token_dim": 20, "channel_dim": 52},
    "full_alt": {"batch_size": 160, "num_patches": 256, "channels": 1024, "token_dim": 512, "channel_dim": 4096},
    "dtype": "bfloat16",
}


def _layer_norm(d: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(d, eps=1e-6)
    nn.init.normal_(norm.weight, 1.0, 0.1)
    nn.init.normal_(norm.bias, 0.0, 0.1)
    return norm


class Model(nn.Module):
    """h = x + (W_t2 gelu(W_t1 LN1(x)^T))^T (mixing across the patches of each channel);
    out = h + W_c2 gelu(W_c1 LN2 h)."""

    def __init__(self, num_patches: int, channels: int, token_dim: int, channel_dim: int):
        super().__init__()
        self.ln1, self.ln2 = _layer_norm(channels), _layer_norm(channels)
        self.token1 = nn.Linear(num_patches, token_dim)
        self.token2 = nn.Linear(token_dim, num_patches)
        self.channel1 = nn.Linear(channels, channel_dim)
        self.channel2 = nn.Linear(channel_dim, channels)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.ln1(x).transpose(1, 2)  # (batch, channels, patches)
        h = x + self.token2(F.gelu(self.token1(t))).transpose(1, 2)
        return h + self.channel2(F.gelu(self.channel1(self.ln2(h))))


def get_inputs():
    return [torch.randn(batch_size, num_patches, channels, dtype=torch.bfloat16)]


def get_init_inputs():
    return [num_patches, channels, token_dim, channel_dim]
