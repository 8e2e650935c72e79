"""Swin transformer block with shifted-window attention and relative position bias.

Swin transformer block with shifted windows: LayerNorm, cyclic shift, attention inside each window with a learned
relative-position bias and the shift's region mask, reverse shift, residual, LayerNorm, GELU MLP, residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 32
resolution = 56
channels = 128
n_heads = 4
window = 7
shift = 3

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "resolution": 8, "channels": 16, "n_heads": 2, "window": 4, "shift": 2},
    "alt": {"batch_size": 3, "resolution": 15, "channels": 12, "n_heads": 3, "window": 5, "shift": 2},
    "full_alt": {"batch_size": 24, "resolution": 48, "channels": 192, "n_heads": 6, "window": 12, "shift": 6},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (scores with bias and mask, softmax); a float32/float64 tensor stays."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _layer_norm(d: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(d)
    nn.init.normal_(norm.weight, 1.0, 0.1)
    nn.init.normal_(norm.bias, 0.0, 0.1)
    return norm


def _windows(x: torch.Tensor, w: int) -> torch.Tensor:
    """(batch, H, W, C) -> (batch * windows, w * w, C), windows in row-major order."""
    b, hgt, wid, c = x.shape
    return x.view(b, hgt // w, w, wid // w, w, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, c)


def _relative_index(w: int) -> torch.Tensor:
    """(w*w, w*w) index into the (2w-1)^2 bias table of the offset between two positions of a window."""
    coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
    rel = coords[:, :, None] - coords[:, None, :] + (w - 1)
    return rel[0] * (2 * w - 1) + rel[1]


def _shift_mask(resolution: int, w: int, shift: int) -> torch.Tensor:
    """(windows, w*w, w*w) True where two positions of a shifted window came from different regions."""
    region = torch.zeros(1, resolution, resolution, 1)
    cuts = (slice(0, -w), slice(-w, -shift), slice(-shift, None))
    for i, (rows, cols) in enumerate((r, c) for r in cuts for c in cuts):
        region[:, rows, cols, :] = i
    ids = _windows(region, w).squeeze(-1)
    return ids[:, :, None] != ids[:, None, :]


class Model(nn.Module):
    """x (batch, resolution^2, channels) -> h = x + reverse(W_o MHSA_window(shift(LN1 x)) + bias, masked) and
    out = h + W_2 gelu(W_1 LN2 h); shift is torch.roll by -shift on both axes, reversed after attention."""

    def __init__(self, resolution: int, channels: int, n_heads: int, window: int, shift: int):
        super().__init__()
        self.resolution, self.window, self.shift = resolution, window, shift
        self.n_heads, self.head_dim = n_heads, channels // n_heads
        self.ln1, self.ln2 = _layer_norm(channels), _layer_norm(channels)
        self.qkv = nn.Linear(channels, 3 * channels)
        self.proj = nn.Linear(channels, channels)
        self.bias_table = nn.Parameter(0.5 * torch.randn((2 * window - 1) ** 2, n_heads))
        self.register_buffer("rel_index", _relative_index(window), persistent=False)
        self.register_buffer("mask", _shift_mask(resolution, window, shift), persistent=False)
        self.fc1 = nn.Linear(channels, 4 * channels)
        self.fc2 = nn.Linear(4 * channels, channels)
        self.to(torch.bfloat16)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """x: (batch * windows, w*w, C)."""
        bw, n, c = x.shape
        q, k, v = self.qkv(x).view(bw, n, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = _wide(torch.matmul(q, k.transpose(-1, -2))) * self.head_dim ** -0.5
        scores = scores + _wide(self.bias_table[self.rel_index]).permute(2, 0, 1)
        nw = self.mask.shape[0]
        scores = scores.view(-1, nw, self.n_heads, n, n).masked_fill(self.mask[:, None], float("-inf"))
        p = torch.softmax(scores.view(bw, self.n_heads, n, n), dim=-1).to(x.dtype)
        return self.proj(torch.matmul(p, v).transpose(1, 2).reshape(bw, n, c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, c = x.shape
        r, w, s = self.resolution, self.window, self.shift
        h = torch.roll(self.ln1(x).view(b, r, r, c), shifts=(-s, -s), dims=(1, 2))
        h = self.attention(_windows(h, w)).view(b, r // w, r // w, w, w, c)
        h = h.permute(0, 1, 3, 2, 4, 5).reshape(b, r, r, c)
        h = x + torch.roll(h, shifts=(s, s), dims=(1, 2)).reshape(b, r * r, c)
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


def get_inputs():
    return [torch.randn(batch_size, resolution * resolution, channels, dtype=torch.bfloat16)]


def get_init_inputs():
    return [resolution, channels, n_heads, window, shift]
