"""Mamba mixer: projections, causal conv, sequential selective scan, gate.

Mamba mixer (selective state-space model): input projection, causal depthwise conv, input-dependent step size
and B, C, a sequential selective scan over the sequence, SiLU gate, output projection."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
seq_len = 512
d_model = 2048
d_inner = 4096
d_state = 16
dt_rank = 128
conv_width = 4

KERNEL_GYM = {
    "cpu": {"batch_size": 2, "seq_len": 16, "d_model": 32, "d_inner": 64, "d_state": 8, "dt_rank": 8},
    "alt": {"batch_size": 1, "seq_len": 21, "d_model": 40, "d_inner": 72, "d_state": 6, "dt_rank": 5},
    "full_alt": {"batch_size": 3, "seq_len": 300, "d_model": 2560, "d_inner": 5120, "d_state": 16, "dt_rank": 160},
    "dtype": "bfloat16",
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (the scan runs in float32); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """x, z = split(W_in u); x = silu(causal depthwise conv(x)); dt, B, C = split(W_x x); dt = softplus(W_dt dt + b);
    per channel c and state s: h_t = exp(dt_t A) h_{t-1} + dt_t B_t x_t, y_t = <C_t, h_t> + D x_t with A = -exp(A_log);
    out = W_out(y * silu(z)). The scan runs step by step in float32."""

    def __init__(self, d_model: int, d_inner: int, d_state: int, dt_rank: int, conv_width: int):
        super().__init__()
        self.d_inner, self.d_state, self.dt_rank = d_inner, d_state, dt_rank
        self.in_proj = nn.Linear(d_model, 2 * d_inner, bias=False)
        self.conv = nn.Conv1d(d_inner, d_inner, conv_width, groups=d_inner, padding=conv_width - 1)
        self.x_proj = nn.Linear(d_inner, dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(dt_rank, d_inner)
        with torch.no_grad():
            self.dt_proj.bias.copy_(torch.rand(d_inner) * 4 - 6)  # softplus of it: steps of ~0.003-0.1
        self.A_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1, dtype=torch.float32)).repeat(d_inner, 1)
                                  + 0.1 * torch.randn(d_inner, d_state))
        self.D = nn.Parameter(1 + 0.1 * torch.randn(d_inner))
        self.out_proj = nn.Linear(d_inner, d_model, bias=False)
        self.to(torch.bfloat16)

    def scan(self, x: torch.Tensor, dt: torch.Tensor, bmat: torch.Tensor, cmat: torch.Tensor) -> torch.Tensor:
        """x, dt: (batch, seq, d_inner); bmat, cmat: (batch, seq, d_state), all float32 -> (batch, seq, d_inner)."""
        a = -torch.exp(_wide(self.A_log))
        decay = torch.exp(dt[..., None] * a)  # (batch, seq, d_inner, d_state)
        drive = (dt * x)[..., None] * bmat[:, :, None, :]
        h = torch.zeros_like(decay[:, 0])
        ys = []
        for t in range(x.shape[1]):
            h = decay[:, t] * h + drive[:, t]
            ys.append(torch.einsum("bcs,bs->bc", h, cmat[:, t]))
        return torch.stack(ys, dim=1) + x * _wide(self.D)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        n = u.shape[1]
        x, z = self.in_proj(u).chunk(2, dim=-1)
        x = F.silu(self.conv(x.transpose(1, 2))[..., :n].transpose(1, 2))
        dt, bmat, cmat = self.x_proj(x).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = F.softplus(_wide(self.dt_proj(dt)))
        y = self.scan(_wide(x), dt, _wide(bmat), _wide(cmat)).to(u.dtype)
        return self.out_proj(y * F.silu(z))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, d_inner, d_state, dt_rank, conv_width]
