"""Triton solution for level3/llama_decoder_layer: RMSNorm rows; GEMMs with the residual add fused into their epilogue;
the rotary embedding as its own pass; a causal flash-attention kernel in which each query head reads its shared kv
head directly (no repeated K/V) and only the key blocks at or before its queries; gate and up projections as one
dual GEMM with the SiLU product in its epilogue.

bf16 tiles are widened to fp32 and multiplied with `tl.dot(..., input_precision="tf32")` (a bf16 value is exact in
tf32: exact products, fp32 sums); stores round to nearest even by hand (Triton's CPU interpreter truncates an
fp32 -> bf16 cast).
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
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, D, eps, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    x = tl.load(x_ptr + row * D + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * D + cols, _bf16_rne(x * rstd * w), mask=mask)


@triton.jit
def _gemm_kernel(a_ptr, w_ptr, w2_ptr, res_ptr, y_ptr, M, N, K,
                 HAS_RES: tl.constexpr, SWIGLU: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y = a @ w^T (+ res); with SWIGLU, y = silu(a @ w^T) * (a @ w2^T). a (M, K), w and w2 (N, K), bf16."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_mask, n_mask = rm < M, rn < N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = (k0 + rk) < K
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * K + (k0 + rk)[None, :],
                    mask=m_mask[:, None] & k_mask[None, :], other=0.0).to(tl.float32)
        w_off = rn[None, :].to(tl.int64) * K + (k0 + rk)[:, None]
        w_mask = k_mask[:, None] & n_mask[None, :]
        acc = tl.dot(a, tl.load(w_ptr + w_off, mask=w_mask, other=0.0).to(tl.float32), acc, input_precision="tf32")
        if SWIGLU:
            w2 = tl.load(w2_ptr + w_off, mask=w_mask, other=0.0).to(tl.float32)
            acc2 = tl.dot(a, w2, acc2, input_precision="tf32")
    y_off = rm[:, None].to(tl.int64) * N + rn[None, :]
    y_mask = m_mask[:, None] & n_mask[None, :]
    if SWIGLU:
        acc = acc / (1.0 + tl.exp(-acc)) * acc2
    if HAS_RES:
        acc += tl.load(res_ptr + y_off, mask=y_mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + y_off, _bf16_rne(acc), mask=y_mask)


@triton.jit
def _rope_kernel(x_ptr, y_ptr, L, n_heads, log2_base, HALF: tl.constexpr, H_PAD: tl.constexpr,
                 I_PAD: tl.constexpr):
    """Rotate every head of one token (row = b * L + position) by its position's angles."""
    row = tl.program_id(0).to(tl.int64)
    pos = (row % L).to(tl.float32)
    h = tl.arange(0, H_PAD)
    i = tl.arange(0, I_PAD)
    mask = (h < n_heads)[:, None] & (i < HALF)[None, :]
    angle = pos * tl.exp2(-(2.0 * i.to(tl.float32) / (2 * HALF)) * log2_base)
    cos, sin = tl.cos(angle)[None, :], tl.sin(angle)[None, :]
    off = row * n_heads * 2 * HALF + h[:, None] * 2 * HALF + i[None, :]
    x1 = tl.load(x_ptr + off, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + off + HALF, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + off, _bf16_rne(x1 * cos - x2 * sin), mask=mask)
    tl.store(y_ptr + off + HALF, _bf16_rne(x2 * cos + x1 * sin), mask=mask)


@triton.jit
def _attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, L, n_heads, n_kv, scale,
                      HD: tl.constexpr, HD_PAD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Causal attention of one (sequence, query head, query block); q, o (B, L, n_heads, HD), k, v (B, L, n_kv, HD)."""
    pid_m, bh = tl.program_id(0), tl.program_id(1)
    b, h = bh // n_heads, bh % n_heads
    kvh = h // (n_heads // n_kv)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    d = tl.arange(0, HD_PAD)
    d_mask = d < HD
    q_off = ((b * L + rm)[:, None].to(tl.int64) * n_heads + h) * HD + d[None, :]
    q = tl.load(q_ptr + q_off, mask=(rm < L)[:, None] & d_mask[None, :], other=0.0).to(tl.float32)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    den = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HD_PAD], tl.float32)
    for n0 in range(0, tl.minimum(L, (pid_m + 1) * BLOCK_M), BLOCK_N):
        cols = n0 + rn
        kv_off = ((b * L + cols)[:, None].to(tl.int64) * n_kv + kvh) * HD + d[None, :]
        kv_mask = (cols < L)[:, None] & d_mask[None, :]
        k = tl.load(k_ptr + kv_off, mask=kv_mask, other=0.0).to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision="tf32") * scale
        s = tl.where((cols[None, :] <= rm[:, None]) & (cols < L)[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        den = den * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_off, mask=kv_mask, other=0.0).to(tl.float32)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="tf32")
        m = m_new
    tl.store(o_ptr + q_off, _bf16_rne(acc / den[:, None]), mask=(rm < L)[:, None] & d_mask[None, :])


def _gemm(a, w, res=None, w2=None):
    m, k = a.shape
    n = w.shape[0]
    y = torch.empty((m, n), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(m, 32), triton.cdiv(n, 64))
    _gemm_kernel[grid](a, w, w if w2 is None else w2, a if res is None else res, y, m, n, k,
                       HAS_RES=res is not None, SWIGLU=w2 is not None,
                       BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, num_warps=4)
    return y


def _rmsnorm(x, weight, eps):
    y = torch.empty_like(x)
    _rmsnorm_kernel[(x.shape[0],)](x, weight, y, x.shape[1], eps, BLOCK_D=triton.next_power_of_2(x.shape[1]))
    return y


class ModelNew(nn.Module):
    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, ffn_dim: int, rope_base: float):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_model // n_heads
        self.rope_base, self.eps = rope_base, 1e-5
        self.attn_norm = nn.Parameter(1 + 0.1 * torch.randn(d_model))
        self.wq = nn.Linear(d_model, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, d_model, bias=False)
        self.mlp_norm = nn.Parameter(1 + 0.1 * torch.randn(d_model))
        self.w_gate = nn.Linear(d_model, ffn_dim, bias=False)
        self.w_up = nn.Linear(d_model, ffn_dim, bias=False)
        self.w_down = nn.Linear(ffn_dim, d_model, bias=False)
        self.to(torch.bfloat16)

    def _rope(self, x, batch, length, heads):
        y = torch.empty_like(x)
        half = self.head_dim // 2
        _rope_kernel[(batch * length,)](x, y, length, heads, math.log2(self.rope_base), HALF=half,
                                        H_PAD=triton.next_power_of_2(heads), I_PAD=triton.next_power_of_2(half))
        return y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        x2 = x.reshape(b * n, d).contiguous()
        h1 = _rmsnorm(x2, self.attn_norm, self.eps)
        q = self._rope(_gemm(h1, self.wq.weight), b, n, self.n_heads)
        k = self._rope(_gemm(h1, self.wk.weight), b, n, self.n_kv_heads)
        v = _gemm(h1, self.wv.weight)
        o = torch.empty_like(q)
        block = 32
        _attention_kernel[(triton.cdiv(n, block), b * self.n_heads)](
            q, k, v, o, n, self.n_heads, self.n_kv_heads, self.head_dim ** -0.5, HD=self.head_dim,
            HD_PAD=max(16, triton.next_power_of_2(self.head_dim)), BLOCK_M=block, BLOCK_N=block, num_warps=4)
        h = _gemm(o, self.wo.weight, res=x2)
        m = _gemm(_rmsnorm(h, self.mlp_norm, self.eps), self.w_gate.weight, w2=self.w_up.weight)
        return _gemm(m, self.w_down.weight, res=h).view(b, n, d)
