"""Gated DeltaNet linear-attention layer with a step-by-step delta-rule recurrence.

Gated DeltaNet linear-attention layer: q, k, v projections, L2-normalised q and k, a gated delta-rule state update
run step by step over the sequence, RMSNorm of the read-out gated by SiLU, output projection."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
seq_len = 256
d_model = 2048
n_heads = 16
head_dim = 128

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 12, "d_model": 32, "n_heads": 2, "head_dim": 8},
    "alt": {"batch_size": 1, "seq_len": 17, "d_model": 36, "n_heads": 3, "head_dim": 6},
    "full_alt": {"batch_size": 3, "seq_len": 200, "d_model": 2560, "n_heads": 20, "head_dim": 128},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (the recurrence runs in float32); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """Per head, with state S (head_dim x head_dim), alpha_t = exp(-exp(A_log) softplus(W_a x_t + dt_bias)) and
    beta_t = sigmoid(W_b x_t): S_t = alpha_t S_{t-1} + beta_t (v_t - alpha_t S_{t-1} k_t) k_t^T, o_t = S_t q_t /
    sqrt(head_dim), with q_t, k_t L2-normalised. out = W_o(RMSNorm(o) * silu(W_g x)). The recurrence runs in
    float32, one time step at a time."""

    def __init__(self, d_model: int, n_heads: int, head_dim: int):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, head_dim
        inner = n_heads * head_dim
        self.wq = nn.Linear(d_model, inner, bias=False)
        self.wk = nn.Linear(d_model, inner, bias=False)
        self.wv = nn.Linear(d_model, inner, bias=False)
        self.wa = nn.Linear(d_model, n_heads, bias=False)
        self.wb = nn.Linear(d_model, n_heads, bias=False)
        self.wg = nn.Linear(d_model, inner, bias=False)
        self.A_log = nn.Parameter(torch.log(torch.rand(n_heads) * 15 + 1))
        self.dt_bias = nn.Parameter(torch.rand(n_heads) * 4 - 6)
        self.norm = nn.Parameter(1 + 0.1 * torch.randn(head_dim))
        self.wo = nn.Linear(inner, d_model, bias=False)
        self.to(torch.bfloat16)

    def recurrence(self, q, k, v, alpha, beta):
        """q, k, v: (batch, seq, heads, head_dim); alpha, beta: (batch, seq, heads); float32. Returns like v."""
        state = torch.zeros(*v.shape[:1], v.shape[2], self.head_dim, self.head_dim, dtype=v.dtype, device=v.device)
        outs = []
        for t in range(v.shape[1]):
            a, bt, kt = alpha[:, t, :, None, None], beta[:, t, :, None], k[:, t]
            state = a * state
            error = v[:, t] - torch.einsum("bhvk,bhk->bhv", state, kt)
            state = state + torch.einsum("bhv,bhk->bhvk", bt * error, kt)
            outs.append(torch.einsum("bhvk,bhk->bhv", state, q[:, t]))
        return torch.stack(outs, dim=1) * self.head_dim ** -0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        shape = (b, n, self.n_heads, self.head_dim)
        q = F.normalize(_wide(self.wq(x)).view(shape), dim=-1)
        k = F.normalize(_wide(self.wk(x)).view(shape), dim=-1)
        v = _wide(self.wv(x)).view(shape)
        alpha = torch.exp(-torch.exp(_wide(self.A_log)) * F.softplus(_wide(self.wa(x)) + _wide(self.dt_bias)))
        beta = torch.sigmoid(_wide(self.wb(x)))
        o = self.recurrence(q, k, v, alpha, beta)
        o = (o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * self.norm
        return self.wo((o * F.silu(self.wg(x)).view(shape)).reshape(b, n, -1))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, n_heads, head_dim]
