"""Triton solution for level3/kv_cache_decode: the four projections as one tiled GEMM kernel (bf16 tiles widened to
fp32, exact tf32 products), and one attention kernel per (sequence, kv head) that rotates q and the new key to the
token's position in registers, streams the cache once for the whole group of query heads (no repeated K/V),
with an online softmax in fp32, and adds the new token's own key and value last.

Stores round to nearest even by hand: Triton's CPU interpreter truncates an fp32 -> bf16 cast.
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
def _linear_kernel(a_ptr, w_ptr, y_ptr, M, N, K,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
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
def _rotate(x1, x2, cos, sin):
    return x1 * cos - x2 * sin, x2 * cos + x1 * sin


@triton.jit
def _decode_kernel(q_ptr, k_ptr, v_ptr, kc_ptr, vc_ptr, o_ptr, S, n_kv, pos, log2_base, scale,
                   GROUP: tl.constexpr, HALF: tl.constexpr, G_PAD: tl.constexpr, H_PAD: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    b, kvh = pid // n_kv, pid % n_kv
    hd = 2 * HALF
    g = tl.arange(0, G_PAD)
    i = tl.arange(0, H_PAD)
    g_mask, i_mask = g < GROUP, i < HALF
    gi_mask = g_mask[:, None] & i_mask[None, :]
    angle = pos * tl.exp2(-(2.0 * i.to(tl.float32) / hd) * log2_base)
    cos, sin = tl.cos(angle), tl.sin(angle)
    heads = kvh * GROUP + g
    q_row = q_ptr + (b * n_kv * GROUP + heads)[:, None].to(tl.int64) * hd + i[None, :]
    q1, q2 = _rotate(tl.load(q_row, mask=gi_mask, other=0.0).to(tl.float32),
                     tl.load(q_row + HALF, mask=gi_mask, other=0.0).to(tl.float32), cos[None, :], sin[None, :])
    kv_row = (b * n_kv + kvh).to(tl.int64) * hd + i
    k1, k2 = _rotate(tl.load(k_ptr + kv_row, mask=i_mask, other=0.0).to(tl.float32),
                     tl.load(k_ptr + kv_row + HALF, mask=i_mask, other=0.0).to(tl.float32), cos, sin)
    # the new token's own score starts the online softmax
    m = tl.sum(q1 * k1[None, :] + q2 * k2[None, :], axis=1) * scale
    den = tl.full([G_PAD], 1.0, tl.float32)
    acc1 = tl.load(v_ptr + kv_row, mask=i_mask, other=0.0).to(tl.float32)[None, :] + tl.zeros([G_PAD, H_PAD], tl.float32)
    acc2 = tl.load(v_ptr + kv_row + HALF, mask=i_mask, other=0.0).to(tl.float32)[None, :] + tl.zeros([G_PAD, H_PAD],
                                                                                                      tl.float32)
    cache = (b * n_kv + kvh).to(tl.int64) * S * hd
    n = tl.arange(0, BLOCK_N)
    for n0 in range(0, S, BLOCK_N):
        n_mask = (n0 + n) < S
        tile = cache + (n0 + n)[:, None].to(tl.int64) * hd + i[None, :]
        ni_mask = n_mask[:, None] & i_mask[None, :]
        c1 = tl.load(kc_ptr + tile, mask=ni_mask, other=0.0).to(tl.float32)
        c2 = tl.load(kc_ptr + tile + HALF, mask=ni_mask, other=0.0).to(tl.float32)
        s = tl.sum(q1[:, None, :] * c1[None, :, :] + q2[:, None, :] * c2[None, :, :], axis=2) * scale
        s = tl.where(n_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        den = den * alpha + tl.sum(p, axis=1)
        v1 = tl.load(vc_ptr + tile, mask=ni_mask, other=0.0).to(tl.float32)
        v2 = tl.load(vc_ptr + tile + HALF, mask=ni_mask, other=0.0).to(tl.float32)
        acc1 = acc1 * alpha[:, None] + tl.sum(p[:, :, None] * v1[None, :, :], axis=1)
        acc2 = acc2 * alpha[:, None] + tl.sum(p[:, :, None] * v2[None, :, :], axis=1)
        m = m_new
    out = o_ptr + (b * n_kv * GROUP + heads)[:, None].to(tl.int64) * hd + i[None, :]
    tl.store(out, _bf16_rne(acc1 / den[:, None]), mask=gi_mask)
    tl.store(out + HALF, _bf16_rne(acc2 / den[:, None]), mask=gi_mask)


def _linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    m, k = x.shape
    n = weight.shape[0]
    y = torch.empty((m, n), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(m, 16), triton.cdiv(n, 64))
    _linear_kernel[grid](x, weight, y, m, n, k, BLOCK_M=16, BLOCK_N=64, BLOCK_K=64, num_warps=4)
    return y


class ModelNew(nn.Module):
    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, rope_base: float):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_model // n_heads
        self.rope_base = rope_base
        self.wq = nn.Linear(d_model, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, d_model, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        b, s = x.shape[0], k_cache.shape[2]
        x2 = x.reshape(b, -1).contiguous()
        q, k, v = _linear(x2, self.wq.weight), _linear(x2, self.wk.weight), _linear(x2, self.wv.weight)
        o = torch.empty_like(q)
        group, half = self.n_heads // self.n_kv_heads, self.head_dim // 2
        _decode_kernel[(b * self.n_kv_heads,)](
            q, k, v, k_cache.contiguous(), v_cache.contiguous(), o, s, self.n_kv_heads, s,
            math.log2(self.rope_base), self.head_dim ** -0.5,
            GROUP=group, HALF=half, G_PAD=triton.next_power_of_2(group), H_PAD=triton.next_power_of_2(half),
            BLOCK_N=32, num_warps=4)
        return _linear(o, self.wo.weight).view(b, 1, -1)
