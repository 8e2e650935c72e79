"""Triton solution for level3/convnext_block: three kernels, no permute copies.

1. the 7x7 depthwise convolution (with its bias) of a block of pixels for every channel at once, straight from the
   NCHW input, and the channel LayerNorm of those pixels in the same program: one channels-last bf16 write;
2. fc1 as a tiled GEMM with its bias and the exact (erf) GELU in the epilogue;
3. fc2 as a tiled GEMM whose epilogue adds the bias, applies the layer scale and the residual, and stores the
   result back in NCHW order.

bf16 tiles are widened to fp32 and multiplied with `tl.dot(..., input_precision="tf32")` (a bf16 value is exact in
tf32); stores round to nearest even by hand (Triton's CPU interpreter truncates an fp32 -> bf16 cast).
"""
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
def _dwconv_norm_kernel(x_ptr, cw_ptr, cb_ptr, nw_ptr, nb_ptr, y_ptr, P, C, H, W, eps,
                        KS: tl.constexpr, BLOCK_P: tl.constexpr, C_PAD: tl.constexpr):
    """y[p, c] = LayerNorm_c(bias[c] + sum_{dy,dx} w[c, dy, dx] x[b, c, h + dy - KS//2, w + dx - KS//2])."""
    rp = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    rc = tl.arange(0, C_PAD)
    p_mask, c_mask = rp < P, rc < C
    hw = H * W
    b, pix = rp // hw, rp % hw
    row, col = pix // W, pix % W
    plane = b.to(tl.int64)[:, None] * C * hw + rc[None, :].to(tl.int64) * hw  # (pixel, channel) -> its plane
    acc = tl.zeros([BLOCK_P, C_PAD], dtype=tl.float32)
    acc += tl.load(cb_ptr + rc, mask=c_mask, other=0.0).to(tl.float32)[None, :]
    for dy in range(KS):
        r = row + dy - KS // 2
        r_ok = p_mask & (r >= 0) & (r < H)
        for dx in range(KS):
            q = col + dx - KS // 2
            ok = r_ok & (q >= 0) & (q < W)
            v = tl.load(x_ptr + plane + (r * W + q)[:, None], mask=ok[:, None] & c_mask[None, :], other=0.0)
            wt = tl.load(cw_ptr + rc * KS * KS + dy * KS + dx, mask=c_mask, other=0.0).to(tl.float32)
            acc += v.to(tl.float32) * wt[None, :]
    mean = tl.sum(acc, axis=1) / C
    diff = tl.where(c_mask[None, :], acc - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(diff * diff, axis=1) / C + eps)
    nw = tl.load(nw_ptr + rc, mask=c_mask, other=0.0).to(tl.float32)
    nb = tl.load(nb_ptr + rc, mask=c_mask, other=0.0).to(tl.float32)
    out = diff * rstd[:, None] * nw[None, :] + nb[None, :]
    tl.store(y_ptr + rp[:, None].to(tl.int64) * C + rc[None, :], _bf16_rne(out), mask=p_mask[:, None] & c_mask[None, :])


@triton.jit
def _gemm_kernel(a_ptr, w_ptr, bias_ptr, gamma_ptr, res_ptr, y_ptr, M, N, K, HW,
                 GELU: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """acc = a (M, K) @ w (N, K)^T + bias. GELU: y (M, N) = gelu(acc). Else: y in NCHW = res + gamma * acc, with
    row m = (image, pixel) and column n a channel."""
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
    acc += tl.load(bias_ptr + rn, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    y_mask = m_mask[:, None] & n_mask[None, :]
    if GELU:
        out = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
        tl.store(y_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], _bf16_rne(out), mask=y_mask)
    else:
        img, pix = rm // HW, rm % HW
        off = img.to(tl.int64)[:, None] * N * HW + rn[None, :].to(tl.int64) * HW + pix[:, None]
        gamma = tl.load(gamma_ptr + rn, mask=n_mask, other=0.0).to(tl.float32)
        out = tl.load(res_ptr + off, mask=y_mask, other=0.0).to(tl.float32) + acc * gamma[None, :]
        tl.store(y_ptr + off, _bf16_rne(out), mask=y_mask)


def _gemm(a, weight, bias, y, hw=1, gamma=None, res=None):
    m, k, n = a.shape[0], weight.shape[1], weight.shape[0]
    _gemm_kernel[(triton.cdiv(m, 64), triton.cdiv(n, 64))](
        a, weight, bias, bias if gamma is None else gamma, a if res is None else res, y, m, n, k, hw,
        GELU=gamma is None, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4)
    return y


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.dwconv = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = nn.LayerNorm(channels, eps=1e-6)
        nn.init.normal_(self.norm.weight, 1.0, 0.1)
        nn.init.normal_(self.norm.bias, 0.0, 0.1)
        self.fc1 = nn.Linear(channels, 4 * channels)
        self.fc2 = nn.Linear(4 * channels, channels)
        self.gamma = nn.Parameter(0.5 + 0.1 * torch.randn(channels))
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        x = x.contiguous()
        p, c_pad = b * h * w, triton.next_power_of_2(c)
        block_p = min(128, max(16, 4096 // c_pad))  # a 4096-element fp32 tile: 32 registers a thread
        normed = torch.empty((p, c), device=x.device, dtype=x.dtype)
        _dwconv_norm_kernel[(triton.cdiv(p, block_p),)](
            x, self.dwconv.weight, self.dwconv.bias, self.norm.weight, self.norm.bias, normed, p, c, h, w,
            self.norm.eps, KS=7, BLOCK_P=block_p, C_PAD=c_pad, num_warps=4)
        hidden = _gemm(normed, self.fc1.weight, self.fc1.bias,
                       torch.empty((p, self.fc1.weight.shape[0]), device=x.device, dtype=x.dtype))
        return _gemm(hidden, self.fc2.weight, self.fc2.bias, torch.empty_like(x), hw=h * w, gamma=self.gamma, res=x)
