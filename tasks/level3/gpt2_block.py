"""GPT-2 transformer block: pre-LayerNorm causal attention and tanh-GELU MLP.

GPT-2 style transformer block: pre-LayerNorm causal multi-head attention with biased projections, pre-LayerNorm
tanh-GELU MLP, two residual adds."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
seq_len = 1024
d_model = 1600
n_heads = 25

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 16, "d_model": 32, "n_heads": 4},
    "alt": {"batch_size": 3, "seq_len": 21, "d_model": 30, "n_heads": 5},
    "full_alt": {"batch_size": 6, "seq_len": 700, "d_model": 1280, "n_heads": 20},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (softmax); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _layer_norm(d: int) -> nn.LayerNorm:
    norm = nn.LayerNorm(d)
    nn.init.normal_(norm.weight, 1.0, 0.1)
    nn.init.normal_(norm.bias, 0.0, 0.1)
    return norm


class Model(nn.Module):
    """h = x + W_p causal_MHSA(LN1 x) (+ biases); out = h + W_2 gelu_tanh(W_1 LN2 h + b_1) + b_2; softmax in float32."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.ln1, self.ln2 = _layer_norm(d_model), _layer_norm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.out = nn.Linear(4 * d_model, d_model)
        self.to(torch.bfloat16)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.head_dim ** -0.5
        future = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        p = torch.softmax(_wide(scores).masked_fill(future, float("-inf")), dim=-1).to(x.dtype)
        return self.proj(torch.matmul(p, v).transpose(1, 2).reshape(b, n, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.ln1(x))
        return h + self.out(F.gelu(self.fc(self.ln2(h)), approximate="tanh"))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads]
