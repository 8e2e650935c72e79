"""Mixture-of-experts SwiGLU layer: top-k routing, uneven expert loads, capacity limit.

Mixture-of-experts SwiGLU layer with top-k token-choice routing, skewed expert loads and a capacity limit per
expert (tokens past it are dropped for that expert), computed as batched expert GEMMs over padded slots."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 8192
d_model = 2048
expert_dim = 5632
n_experts = 8
top_k = 2
capacity_factor = 1.5

KERNEL_GYM = {
    "cpu": {"num_tokens": 64, "d_model": 32, "expert_dim": 48, "n_experts": 4},
    "alt": {"num_tokens": 77, "d_model": 40, "expert_dim": 56, "n_experts": 6, "top_k": 3},
    "full_alt": {"num_tokens": 6001, "d_model": 2048, "expert_dim": 4000, "n_experts": 16, "top_k": 2},
    "dtype": "bfloat16",
    # a token whose top-k experts are a near-tie in fp32 logits routes either way under another summation order
    # (a correct kernel included: H100, 2026-12-07f): the budget's worst-element measure may leave 0.1 % out
    "outlier_fraction": 1e-3,
}


def _wide(x: torch.Tensor) -> torch.Tensor:
    """float32 for a bf16/fp16 tensor (the router); a float32/float64 tensor stays as it is."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class Model(nn.Module):
    """Router: softmax(x W_r^T + load_bias) in float32 (load_bias makes low-numbered experts popular), top-k experts
    per token, gates renormalised to sum 1. Each expert takes at most C = ceil(capacity_factor * tokens * k / E)
    assignments, in token order; an assignment past its expert's capacity contributes nothing. Expert e computes
    W_down[e] (silu(W_gate[e] x) * W_up[e] x) on its C slots (empty slots hold zeros); a token's output is the
    gate-weighted sum over its kept assignments. Routing is deterministic: it depends on the inputs and weights only."""

    def __init__(self, d_model: int, expert_dim: int, n_experts: int, top_k: int, capacity_factor: float):
        super().__init__()
        self.n_experts, self.top_k, self.capacity_factor = n_experts, top_k, capacity_factor
        self.router = nn.Linear(d_model, n_experts, bias=False)
        self.register_buffer("load_bias", torch.linspace(0.3, -0.3, n_experts))
        self.w_gate = nn.Parameter(torch.randn(n_experts, d_model, expert_dim) * d_model ** -0.5)
        self.w_up = nn.Parameter(torch.randn(n_experts, d_model, expert_dim) * d_model ** -0.5)
        self.w_down = nn.Parameter(torch.randn(n_experts, expert_dim, d_model) * expert_dim ** -0.5)
        self.to(torch.bfloat16)

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = _wide(x) @ _wide(self.router.weight).t() + _wide(self.load_bias)
        gate, expert = torch.softmax(logits, dim=-1).topk(self.top_k, dim=-1)
        return gate / gate.sum(-1, keepdim=True), expert

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t, d = x.shape
        e, k = self.n_experts, self.top_k
        cap = math.ceil(self.capacity_factor * t * k / e)
        gate, expert = self.route(x)
        flat = expert.flatten()  # assignment a = token * k + j goes to expert flat[a]
        order = torch.argsort(flat, stable=True)  # assignments grouped by expert, in token order
        counts = torch.zeros(e, dtype=torch.long, device=x.device).scatter_add_(0, flat, torch.ones_like(flat))
        start = torch.cumsum(counts, 0) - counts
        rank = torch.empty_like(order).scatter_(0, order, torch.arange(t * k, device=x.device))
        pos = rank - start[flat]  # each assignment's place in its expert's queue
        slot = torch.arange(cap, device=x.device)
        src = (start[:, None] + slot).clamp(max=t * k - 1)
        filled = (slot < counts[:, None]).to(x.dtype)
        xe = x[order[src] // k] * filled[..., None]  # (E, C, d): expert e's slot c
        h = F.silu(torch.bmm(xe, self.w_gate)) * torch.bmm(xe, self.w_up)
        ye = torch.bmm(h, self.w_down).reshape(e * cap, d)
        weight = (gate.flatten() * (pos < cap)).to(x.dtype)
        y = ye[flat * cap + pos.clamp(max=cap - 1)] * weight[:, None]
        return y.view(t, k, d).sum(1)


def get_inputs():
    return [torch.randn(num_tokens, d_model, dtype=torch.bfloat16)]


def get_init_inputs():
    return [d_model, expert_dim, n_experts, top_k, capacity_factor]
