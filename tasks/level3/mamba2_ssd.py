"""Mamba-2 SSD scan in chunked (parallel) form.

Mamba-2 state-space duality (SSD) scan in chunked form: within each chunk the scan is a masked, decay-weighted
attention-like product; across chunks a small recurrence carries the state. No sequential loop over time."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
seq_len = 4096
n_heads = 32
head_dim = 64
d_state = 128
chunk = 256

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 24, "n_heads": 2, "head_dim": 8, "d_state": 8, "chunk": 8},
    "alt": {"batch_size": 1, "seq_len": 29, "n_heads": 3, "head_dim": 6, "d_state": 5, "chunk": 7},
    "full_alt": {"batch_size": 3, "seq_len": 2000, "n_heads": 40, "head_dim": 64, "d_state": 96, "chunk": 128},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (the scan runs in float32); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _segment_sums(a: torch.Tensor) -> torch.Tensor:
    """a (..., T) -> (..., T, T): entry [i, j] = a[j+1] + ... + a[i] for j <= i, -inf above the diagonal."""
    t = a.shape[-1]
    cs = torch.cumsum(a, dim=-1)
    out = cs[..., :, None] - cs[..., None, :]
    upper = torch.ones(t, t, dtype=torch.bool, device=a.device).triu(1)
    return out.masked_fill(upper, float("-inf"))


class Model(nn.Module):
    """The scan h_t = exp(dt_t A_h) h_{t-1} + dt_t B_t x_t^T, y_t = C_t h_t + D_h x_t per head h (state d_state x
    head_dim, B and C shared by all heads), dt = softplus(dt_raw + dt_bias), A = -exp(A_log); y (batch, seq, heads,
    head_dim) in the input dtype. The sequence is padded to a multiple of `chunk` with dt = 0 and cut back."""

    def __init__(self, n_heads: int, chunk: int):
        super().__init__()
        self.chunk = chunk
        self.A_log = nn.Parameter(torch.log(torch.rand(n_heads) * 15 + 1))
        self.dt_bias = nn.Parameter(torch.rand(n_heads) * 4 - 6)
        self.D = nn.Parameter(1 + 0.1 * torch.randn(n_heads))
        self.to(torch.bfloat16)

    def forward(self, x, dt_raw, bmat, cmat):
        b, n, h, p = x.shape
        q = self.chunk
        pad = (-n) % q
        dt = F.softplus(_wide(dt_raw) + _wide(self.dt_bias))  # (batch, seq, heads)
        xs, dt = F.pad(_wide(x), (0, 0, 0, 0, 0, pad)), F.pad(dt, (0, 0, 0, pad))
        bs, cs = F.pad(_wide(bmat), (0, 0, 0, pad)), F.pad(_wide(cmat), (0, 0, 0, pad))
        c = (n + pad) // q
        xs, bs, cs = xs.view(b, c, q, h, p), bs.view(b, c, q, -1), cs.view(b, c, q, -1)
        a = (dt * -torch.exp(_wide(self.A_log))).view(b, c, q, h).permute(0, 3, 1, 2)  # (batch, heads, chunks, q)
        xdt = xs * dt.view(b, c, q, h, 1)
        a_cum = torch.cumsum(a, dim=-1)
        # within chunks: y[l] = sum_{s <= l} (C_l . B_s) exp(a_cum[l] - a_cum[s]) x_s dt_s
        weights = torch.einsum("bcln,bcsn->bcls", cs, bs)[:, None] * torch.exp(_segment_sums(a))
        y = torch.einsum("bhcls,bcshp->bclhp", weights, xdt)
        # each chunk's final state, then the states entering each chunk through the chunk-level recurrence
        to_end = torch.exp(a_cum[..., -1:] - a_cum)
        states = torch.einsum("bcln,bhcl,bclhp->bchpn", bs, to_end, xdt)
        states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
        carry = torch.exp(_segment_sums(F.pad(a_cum[..., -1], (1, 0))))  # (batch, heads, chunks+1, chunks+1)
        entering = torch.einsum("bhzc,bchpn->bzhpn", carry, states)[:, :-1]
        y = y + torch.einsum("bcln,bchpn,bhcl->bclhp", cs, entering, torch.exp(a_cum))
        y = y.reshape(b, c * q, h, p)[:, :n] + _wide(x) * _wide(self.D)[:, None]
        return y.to(x.dtype)


def get_inputs():
    return [torch.randn(batch_size, seq_len, n_heads, head_dim, dtype=torch.bfloat16),
            torch.randn(batch_size, seq_len, n_heads, dtype=torch.bfloat16),
            torch.randn(batch_size, seq_len, d_state, dtype=torch.bfloat16),
            torch.randn(batch_size, seq_len, d_state, dtype=torch.bfloat16)]


def get_init_inputs():
    return [n_heads, chunk]
