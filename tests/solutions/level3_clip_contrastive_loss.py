"""Triton solution for level3/clip_contrastive_loss: the (batch x batch) similarity matrix is never written.

A tiled GEMM kernel for the two projections and a row kernel for the L2 normalisation; then one kernel per
(image block, text block) tile computes the scaled cosine similarities in fp32 and reduces the tile at once to
per-row partial (max, sum of exponentials) for the image-side softmax, per-column partials for the text-side
softmax, and the diagonal where the tile holds it; a last kernel merges each pair's row and column partials into
the two log-sum-exps and the loss.

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
def _normalize_kernel(x_ptr, y_ptr, M, D, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    """y = x / max(||x||, 1e-12) for a block of rows, fp32 norms, bf16 out."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_D)
    mask = (rows < M)[:, None] & (cols < D)[None, :]
    off = rows[:, None].to(tl.int64) * D + cols[None, :]
    x = tl.load(x_ptr + off, mask=mask, other=0.0).to(tl.float32)
    norm = tl.maximum(tl.sqrt(tl.sum(x * x, axis=1)), 1e-12)
    tl.store(y_ptr + off, _bf16_rne(x / norm[:, None]), mask=mask)


@triton.jit
def _similarity_partials_kernel(img_ptr, txt_ptr, scale_ptr, rmax_ptr, rsum_ptr, cmax_ptr, csum_ptr, diag_ptr,
                                N, K, NB, MB,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Tile (pid_m, pid_n) of L = exp(logit_scale) img txt^T, reduced along rows and along columns."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_mask, n_mask = rm < N, rn < N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = (k0 + rk) < K
        a = tl.load(img_ptr + rm[:, None].to(tl.int64) * K + (k0 + rk)[None, :],
                    mask=m_mask[:, None] & k_mask[None, :], other=0.0).to(tl.float32)
        b = tl.load(txt_ptr + rn[None, :].to(tl.int64) * K + (k0 + rk)[:, None],
                    mask=k_mask[:, None] & n_mask[None, :], other=0.0).to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision="tf32")
    logits = acc * tl.exp(tl.load(scale_ptr).to(tl.float32))
    valid = m_mask[:, None] & n_mask[None, :]
    s = tl.where(valid, logits, float("-inf"))
    row_max = tl.max(s, axis=1)
    row_sum = tl.sum(tl.exp(s - tl.where(m_mask, row_max, 0.0)[:, None]), axis=1)
    tl.store(rmax_ptr + rm.to(tl.int64) * NB + pid_n, row_max, mask=m_mask)
    tl.store(rsum_ptr + rm.to(tl.int64) * NB + pid_n, row_sum, mask=m_mask)
    col_max = tl.max(s, axis=0)
    col_sum = tl.sum(tl.exp(s - tl.where(n_mask, col_max, 0.0)[None, :]), axis=0)
    tl.store(cmax_ptr + rn.to(tl.int64) * MB + pid_m, col_max, mask=n_mask)
    tl.store(csum_ptr + rn.to(tl.int64) * MB + pid_m, col_sum, mask=n_mask)
    on_diag = rm[:, None] == rn[None, :]
    here = m_mask & (rm >= pid_n * BLOCK_N) & (rm < pid_n * BLOCK_N + BLOCK_N)
    tl.store(diag_ptr + rm, tl.sum(tl.where(on_diag & valid, logits, 0.0), axis=1), mask=here)


@triton.jit
def _merged_lse(pmax_ptr, psum_ptr, rows, row_mask, NP, BLOCK_R: tl.constexpr, BLOCK: tl.constexpr):
    """log(sum_b psum[r, b] exp(pmax[r, b])) over each row's NP partials."""
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK_R, BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK_R, BLOCK], tl.float32)
    for b0 in range(0, NP, BLOCK):
        mask = row_mask[:, None] & ((b0 + cols) < NP)[None, :]
        off = rows[:, None].to(tl.int64) * NP + b0 + cols[None, :]
        pm = tl.load(pmax_ptr + off, mask=mask, other=float("-inf"))
        ps = tl.load(psum_ptr + off, mask=mask, other=0.0)
        m_new = tl.maximum(m, pm)
        safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - safe) + ps * tl.exp(pm - safe)
        m = m_new
    top = tl.where(row_mask, tl.max(m, axis=1), 0.0)
    total = tl.where(row_mask, tl.sum(s * tl.exp(m - top[:, None]), axis=1), 1.0)  # (padding rows: 0 partials)
    return top + tl.log(total)


@triton.jit
def _loss_kernel(rmax_ptr, rsum_ptr, cmax_ptr, csum_ptr, diag_ptr, out_ptr, N, NB, MB,
                 BLOCK_R: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < N
    lse_image = _merged_lse(rmax_ptr, rsum_ptr, rows, row_mask, NB, BLOCK_R, BLOCK)
    lse_text = _merged_lse(cmax_ptr, csum_ptr, rows, row_mask, MB, BLOCK_R, BLOCK)
    diag = tl.load(diag_ptr + rows, mask=row_mask, other=0.0)
    tl.store(out_ptr + rows, _bf16_rne(0.5 * (lse_image + lse_text) - diag), mask=row_mask)


def _project_normalized(x, weight):
    m, k, n = x.shape[0], weight.shape[1], weight.shape[0]
    y = torch.empty((m, n), device=x.device, dtype=x.dtype)
    _gemm_kernel[(triton.cdiv(m, 32), triton.cdiv(n, 64))](x.contiguous(), weight, y, m, n, k, BLOCK_M=32,
                                                           BLOCK_N=64, BLOCK_K=32, num_warps=4)
    out = torch.empty_like(y)
    _normalize_kernel[(triton.cdiv(m, 16),)](y, out, m, n, BLOCK_R=16, BLOCK_D=triton.next_power_of_2(n))
    return out


class ModelNew(nn.Module):
    def __init__(self, image_dim: int, text_dim: int, embed_dim: int):
        super().__init__()
        self.image_proj = nn.Linear(image_dim, embed_dim, bias=False)
        self.text_proj = nn.Linear(text_dim, embed_dim, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))
        self.to(torch.bfloat16)

    def forward(self, image_features: torch.Tensor, text_features: torch.Tensor) -> torch.Tensor:
        img = _project_normalized(image_features, self.image_proj.weight)
        txt = _project_normalized(text_features, self.text_proj.weight)
        n, e = img.shape
        block = 64
        nb = triton.cdiv(n, block)
        part = [torch.empty((n, nb), device=img.device, dtype=torch.float32) for _ in range(4)]
        diag = torch.empty((n,), device=img.device, dtype=torch.float32)
        _similarity_partials_kernel[(nb, nb)](img, txt, self.logit_scale, *part, diag, n, e, nb, nb,
                                              BLOCK_M=block, BLOCK_N=block, BLOCK_K=32, num_warps=4)
        out = torch.empty((n,), device=img.device, dtype=image_features.dtype)
        _loss_kernel[(triton.cdiv(n, 32),)](*part, diag, out, n, nb, nb, BLOCK_R=32,
                                            BLOCK=min(64, triton.next_power_of_2(nb)))
        return out
