"""Triton solution for level3/moe_topk_experts: four kernels, and no padded slot is ever computed.

1. router: per block of tokens, the fp32 logits x W_r^T + load_bias, softmax, top-k by repeated argmax, gates
   renormalised over the chosen k;
2. queues: one program per expert walks the assignments in token order with a running prefix count, giving each
   assignment its place in its expert's queue, the expert's slot -> token table and its load;
3. experts: per (expert, slot block), the gate and up projections of the gathered token rows as one dual GEMM with
   SiLU(gate) * up in its epilogue, then the down projection; a tile whose slots are all past the expert's load
   (or its capacity) returns at once, so the skewed loads cost what they hold, not E x C;
4. combine: each token gathers its kept assignments' expert rows and sums them weighted by their gates.

bf16 tiles are widened to fp32 and multiplied with `tl.dot(..., input_precision="tf32")` (a bf16 value is exact in
tf32); stores round to nearest even by hand (Triton's CPU interpreter truncates an fp32 -> bf16 cast).
"""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bf16_rne(x):
    """fp32 -> bf16, rounded to nearest even on every backend."""
    bits = x.to(tl.int32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536
    return bits.to(tl.float32, bitcast=True).to(tl.bfloat16)


@triton.jit
def _router_kernel(x_ptr, wr_ptr, bias_ptr, gate_ptr, expert_ptr, T, D, E,
                   TOP_K: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr, E_PAD: tl.constexpr):
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    re = tl.arange(0, E_PAD)
    rk = tl.arange(0, BLOCK_K)
    t_mask, e_mask = rt < T, re < E
    logits = tl.zeros([BLOCK_T, E_PAD], dtype=tl.float32)
    for k0 in range(0, D, BLOCK_K):
        k_mask = (k0 + rk) < D
        x = tl.load(x_ptr + rt[:, None].to(tl.int64) * D + (k0 + rk)[None, :],
                    mask=t_mask[:, None] & k_mask[None, :], other=0.0).to(tl.float32)
        w = tl.load(wr_ptr + re[None, :] * D + (k0 + rk)[:, None], mask=k_mask[:, None] & e_mask[None, :],
                    other=0.0).to(tl.float32)
        logits = tl.dot(x, w, logits, input_precision="tf32")
    logits += tl.load(bias_ptr + re, mask=e_mask, other=0.0).to(tl.float32)[None, :]
    logits = tl.where(e_mask[None, :], logits, float("-inf"))
    p = tl.exp(logits - tl.max(logits, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    total = tl.zeros([BLOCK_T], dtype=tl.float32)
    q = p
    for _ in tl.static_range(TOP_K):  # the chosen probabilities' sum, to renormalise the gates
        best = tl.argmax(q, axis=1)
        total += tl.max(q, axis=1)
        q = tl.where(re[None, :] == best[:, None], -1.0, q)
    for j in tl.static_range(TOP_K):  # the same choice again, stored
        best = tl.argmax(p, axis=1)
        tl.store(gate_ptr + rt * TOP_K + j, tl.max(p, axis=1) / total, mask=t_mask)
        tl.store(expert_ptr + rt * TOP_K + j, best.to(tl.int32), mask=t_mask)
        p = tl.where(re[None, :] == best[:, None], -1.0, p)


@triton.jit
def _queue_kernel(expert_ptr, pos_ptr, src_ptr, count_ptr, A, cap, TOP_K: tl.constexpr, BLOCK: tl.constexpr):
    """Expert e's queue: its assignments a = token * k + j in order; pos[a] = place, src[e, place] = token."""
    e = tl.program_id(0)
    r = tl.arange(0, BLOCK)
    run = tl.full([], 0, tl.int32)
    for a0 in range(0, A, BLOCK):
        a = a0 + r
        hit = (tl.load(expert_ptr + a, mask=a < A, other=-1) == e).to(tl.int32)
        place = run + tl.cumsum(hit, 0) - 1
        tl.store(pos_ptr + a, place, mask=hit > 0)
        tl.store(src_ptr + e.to(tl.int64) * cap + place, a // TOP_K, mask=(hit > 0) & (place < cap))
        run += tl.sum(hit, axis=0)
    tl.store(count_ptr + e, run)


@triton.jit
def _expert_kernel(a_ptr, src_ptr, count_ptr, w1_ptr, w2_ptr, y_ptr, cap, N, K,
                   GATHER: tl.constexpr, SWIGLU: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y[e, c] = a_row(e, c) @ w1[e] (K, N) for the expert's filled slots c; with SWIGLU, silu(. @ w1) * (. @ w2).
    a_row is token src[e, c] of a (GATHER) or row (e, c) of a (E, cap, K)."""
    pid_m, pid_n, e = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    filled = tl.minimum(tl.load(count_ptr + e), cap)
    if pid_m * BLOCK_M >= filled:
        return
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_mask, n_mask = rm < filled, rn < N
    slot = e.to(tl.int64) * cap + rm
    if GATHER:
        rows = tl.load(src_ptr + slot, mask=m_mask, other=0).to(tl.int64)
    else:
        rows = slot
    w_base = e.to(tl.int64) * K * N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = (k0 + rk) < K
        a = tl.load(a_ptr + rows[:, None] * K + (k0 + rk)[None, :], mask=m_mask[:, None] & k_mask[None, :],
                    other=0.0).to(tl.float32)
        w_off = w_base + (k0 + rk)[:, None].to(tl.int64) * N + rn[None, :]
        w_mask = k_mask[:, None] & n_mask[None, :]
        acc = tl.dot(a, tl.load(w1_ptr + w_off, mask=w_mask, other=0.0).to(tl.float32), acc, input_precision="tf32")
        if SWIGLU:
            acc2 = tl.dot(a, tl.load(w2_ptr + w_off, mask=w_mask, other=0.0).to(tl.float32), acc2,
                          input_precision="tf32")
    if SWIGLU:
        acc = acc / (1.0 + tl.exp(-acc)) * acc2
    tl.store(y_ptr + slot[:, None] * N + rn[None, :], _bf16_rne(acc), mask=m_mask[:, None] & n_mask[None, :])


@triton.jit
def _combine_kernel(ye_ptr, gate_ptr, expert_ptr, pos_ptr, y_ptr, T, D, cap,
                    TOP_K: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    rd = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    t_mask, d_mask = rt < T, rd < D
    acc = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.float32)
    for j in tl.static_range(TOP_K):
        e = tl.load(expert_ptr + rt * TOP_K + j, mask=t_mask, other=0)
        p = tl.load(pos_ptr + rt * TOP_K + j, mask=t_mask, other=cap)
        kept = t_mask & (p < cap)
        g = tl.load(gate_ptr + rt * TOP_K + j, mask=kept, other=0.0)
        row = e.to(tl.int64) * cap + p
        v = tl.load(ye_ptr + row[:, None] * D + rd[None, :], mask=kept[:, None] & d_mask[None, :], other=0.0)
        acc += g[:, None] * v.to(tl.float32)
    tl.store(y_ptr + rt[:, None].to(tl.int64) * D + rd[None, :], _bf16_rne(acc), mask=t_mask[:, None] & d_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, d_model: int, expert_dim: int, n_experts: int, top_k: int, capacity_factor: float):
        super().__init__()
        self.n_experts, self.top_k, self.capacity_factor = n_experts, top_k, capacity_factor
        self.router = nn.Linear(d_model, n_experts, bias=False)
        self.register_buffer("load_bias", torch.linspace(0.3, -0.3, n_experts))
        self.w_gate = nn.Parameter(torch.randn(n_experts, d_model, expert_dim) * d_model ** -0.5)
        self.w_up = nn.Parameter(torch.randn(n_experts, d_model, expert_dim) * d_model ** -0.5)
        self.w_down = nn.Parameter(torch.randn(n_experts, expert_dim, d_model) * expert_dim ** -0.5)
        self.to(torch.bfloat16)

    def _route(self, x: torch.Tensor, t: int, d: int, cap: int):
        e, k = self.n_experts, self.top_k
        gate = torch.empty((t * k,), device=x.device, dtype=torch.float32)
        expert = torch.empty((t * k,), device=x.device, dtype=torch.int32)
        _router_kernel[(triton.cdiv(t, 32),)](x, self.router.weight, self.load_bias, gate, expert, t, d, e,
                                              TOP_K=k, BLOCK_T=32, BLOCK_K=64,
                                              E_PAD=max(16, triton.next_power_of_2(e)))
        pos = torch.empty_like(expert)
        src = torch.empty((e * cap,), device=x.device, dtype=torch.int32)
        count = torch.empty((e,), device=x.device, dtype=torch.int32)
        _queue_kernel[(e,)](expert, pos, src, count, t * k, cap, TOP_K=k, BLOCK=1024)
        return gate, expert, pos, src, count

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t, d = x.shape
        e, k, f = self.n_experts, self.top_k, self.w_gate.shape[2]
        cap = math.ceil(self.capacity_factor * t * k / e)
        x = x.contiguous()
        gate, expert, pos, src, count = self._route(x, t, d, cap)
        bm, bn, bk = 64, 64, 32
        h = torch.empty((e, cap, f), device=x.device, dtype=x.dtype)
        _expert_kernel[(triton.cdiv(cap, bm), triton.cdiv(f, bn), e)](
            x, src, count, self.w_gate, self.w_up, h, cap, f, d, GATHER=True, SWIGLU=True,
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=4)
        ye = torch.empty((e, cap, d), device=x.device, dtype=x.dtype)
        _expert_kernel[(triton.cdiv(cap, bm), triton.cdiv(d, bn), e)](
            h, src, count, self.w_down, self.w_down, ye, cap, d, f, GATHER=False, SWIGLU=False,
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=4)
        y = torch.empty_like(x)
        _combine_kernel[(triton.cdiv(t, 32), triton.cdiv(d, 128))](ye, gate, expert, pos, y, t, d, cap, TOP_K=k,
                                                                   BLOCK_T=32, BLOCK_D=128)
        return y
