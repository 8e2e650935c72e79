"""BERT-style post-norm encoder layer on a padded batch (key padding mask).

BERT-style encoder layer on a padded batch: bidirectional multi-head attention that ignores each sequence's
padding keys, post-LayerNorm residuals, erf-GELU feed-forward."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
seq_len = 512
d_model = 1024
n_heads = 16
ffn_dim = 4096

KERNEL_GYM = {
    "cpu": {"batch_size": 3, "seq_len": 16, "d_model": 32, "n_heads": 4, "ffn_dim": 64},
    "alt": {"batch_size": 4, "seq_len": 21, "d_model": 30, "n_heads": 3, "ffn_dim": 50},
    "full_alt": {"batch_size": 24, "seq_len": 300, "d_model": 768, "n_heads": 12, "ffn_dim": 3072},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _layer_norm(d: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(d, eps=1e-12)
    nn.init.normal_(norm.weight, 1.0, 0.1)
    nn.init.normal_(norm.bias, 0.0, 0.1)
    return norm


class Model(nn.Module):
    """lengths[i] (1..seq_len) tokens of sequence i are real; keys at positions >= lengths[i] get no attention
    (every query still has an output). h = LN1(x + W_o MHSA(x)); out = LN2(h + W_2 gelu(W_1 h + b_1) + b_2)."""

    def __init__(self, d_model: int, n_heads: int, ffn_dim: int):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.wo = nn.Linear(d_model, d_model)
        self.ln1, self.ln2 = _layer_norm(d_model), _layer_norm(d_model)
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)
        self.to(torch.bfloat16)

    def attention(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.head_dim ** -0.5
        padding = torch.arange(n, device=x.device)[None, :] >= lengths[:, None]  # (batch, keys)
        scores = _wide(scores).masked_fill(padding[:, None, None, :], float("-inf"))
        p = torch.softmax(scores, dim=-1).to(x.dtype)
        return self.wo(torch.matmul(p, v).transpose(1, 2).reshape(b, n, d))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x + self.attention(x, lengths))
        return self.ln2(h + self.fc2(F.gelu(self.fc1(h))))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16),
            torch.randint(1, seq_len + 1, (batch_size,))]


def get_init_inputs():
    return [d_model, n_heads, ffn_dim]
