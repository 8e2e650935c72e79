"""Triton solution for level3/sliding_window_attention: a tiled GEMM kernel for the four projections and one
flash-attention kernel that applies the rotary embedding as it loads q and k (each head's two halves rotated in
registers, two half-width products per score tile), reads each query head's shared kv head directly (no repeated
K/V), and visits only the key blocks that meet the query block's window: O(seq x window), not O(seq^2).

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
def _gemm_kernel(a_ptr, w_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y (M, N) = a (M, K) @ w (N, K)^T, bf16 in and out, fp32 sums."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_mask, n_mask = rm < M, rn < N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = (k0 + rk) < K
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * K + (k0 + rk)[None, :],
                    mask=m_mask[:, None] & k_mask[None, :], other=0.0).to(tl.float32)
        w = tl.load(w_ptr + rn[None, :].to(tl.int64) * K + (k0 + rk)[:, None],
                    mask=k_mask[:, None] & n_mask[None, :], other=0.0).to(tl.float32)
        acc = tl.dot(a, w, acc, input_precision="tf32")
    tl.store(y_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], _bf16_rne(acc), mask=m_mask[:, None] & n_mask[None, :])


@triton.jit
def _rotated_halves(ptr, rows, heads, head, pos, inv_freq, row_mask, i_mask, HALF: tl.constexpr):
    """The two halves of one head of `rows` tokens ((rows, heads, 2 * HALF) layout), rotated to positions `pos`."""
    off = (rows[:, None].to(tl.int64) * heads + head) * (2 * HALF) + tl.arange(0, inv_freq.shape[0])[None, :]
    mask = row_mask[:, None] & i_mask[None, :]
    x1 = tl.load(ptr + off, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(ptr + off + HALF, mask=mask, other=0.0).to(tl.float32)
    angle = pos.to(tl.float32)[:, None] * inv_freq[None, :]
    cos, sin = tl.cos(angle), tl.sin(angle)
    return x1 * cos - x2 * sin, x2 * cos + x1 * sin


@triton.jit
def _window_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, L, n_heads, n_kv, window, scale, log2_base,
                             HALF: tl.constexpr, I_PAD: tl.constexpr, D_PAD: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Query block pid_m of head h of sequence b: keys j with i - window < j <= i, online softmax in fp32."""
    pid_m, bh = tl.program_id(0), tl.program_id(1)
    b, h = bh // n_heads, bh % n_heads
    kvh = h // (n_heads // n_kv)
    i = tl.arange(0, I_PAD)
    i_mask = i < HALF
    inv_freq = tl.exp2(-(2.0 * i.to(tl.float32) / (2 * HALF)) * log2_base)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = rm < L
    q1, q2 = _rotated_halves(q_ptr, b * L + rm, n_heads, h, rm, inv_freq, m_ok, i_mask, HALF)
    d = tl.arange(0, D_PAD)
    d_mask = d < 2 * HALF
    rn = tl.arange(0, BLOCK_N)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    den = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D_PAD], tl.float32)
    lo = tl.maximum(pid_m * BLOCK_M - window + 1, 0) // BLOCK_N * BLOCK_N
    for n0 in range(lo, tl.minimum(L, (pid_m + 1) * BLOCK_M), BLOCK_N):
        cols = n0 + rn
        n_ok = cols < L
        k1, k2 = _rotated_halves(k_ptr, b * L + cols, n_kv, kvh, cols, inv_freq, n_ok, i_mask, HALF)
        s = tl.dot(q1, tl.trans(k1), input_precision="tf32")
        s = tl.dot(q2, tl.trans(k2), s, input_precision="tf32") * scale
        offset = rm[:, None] - cols[None, :]
        s = tl.where((offset >= 0) & (offset < window) & n_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        # a row can meet a whole block outside its window before its first key: keep its sums 0, not NaN
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m - m_safe)
        p = tl.exp(s - m_safe[:, None])
        den = den * alpha + tl.sum(p, axis=1)
        v_off = ((b * L + cols)[:, None].to(tl.int64) * n_kv + kvh) * (2 * HALF) + d[None, :]
        v = tl.load(v_ptr + v_off, mask=n_ok[:, None] & d_mask[None, :], other=0.0).to(tl.float32)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="tf32")
        m = m_new
    o_off = ((b * L + rm)[:, None].to(tl.int64) * n_heads + h) * (2 * HALF) + d[None, :]
    den = tl.maximum(den, 1.0)  # >= 1 on every real row (its top score adds exp(0)); 0 on padding rows
    tl.store(o_ptr + o_off, _bf16_rne(acc / den[:, None]), mask=m_ok[:, None] & d_mask[None, :])


def _gemm(a, weight):
    m, k, n = a.shape[0], weight.shape[1], weight.shape[0]
    y = torch.empty((m, n), device=a.device, dtype=a.dtype)
    _gemm_kernel[(triton.cdiv(m, 32), triton.cdiv(n, 64))](a, weight, y, m, n, k, BLOCK_M=32, BLOCK_N=64,
                                                           BLOCK_K=32, num_warps=4)
    return y


class ModelNew(nn.Module):
    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, window: int, rope_base: float):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_model // n_heads
        self.window, self.rope_base = window, rope_base
        self.wq = nn.Linear(d_model, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, d_model, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        x2 = x.reshape(b * n, d).contiguous()
        q, k, v = _gemm(x2, self.wq.weight), _gemm(x2, self.wk.weight), _gemm(x2, self.wv.weight)
        o = torch.empty_like(q)
        half, block = self.head_dim // 2, 32
        _window_attention_kernel[(triton.cdiv(n, block), b * self.n_heads)](
            q, k, v, o, n, self.n_heads, self.n_kv_heads, self.window, self.head_dim ** -0.5,
            math.log2(self.rope_base), HALF=half, I_PAD=max(16, triton.next_power_of_2(half)),
            D_PAD=max(16, triton.next_power_of_2(self.head_dim)), BLOCK_M=block, BLOCK_N=block, num_warps=4)
        return _gemm(o, self.wo.weight).view(b, n, d)
