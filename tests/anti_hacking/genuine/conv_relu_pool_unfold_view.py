"""Genuine conv_relu_pool: the input is handed to the kernel as a patch *view* made with `Tensor.unfold`
(`x.unfold(2, KH, 1).unfold(3, KW, 1)`: shape (B, C, OH, OW, KH, KW), no copy), and the kernel addresses it
through the view's six strides; convolution, bias, ReLU and max-pooling are all computed in the Triton kernel.
`unfold` is a view (allowed by the static rules' TENSOR_OK), but the dynamic op audit's allowlist lacks it.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _conv_relu_pool_kernel(x_ptr, w_ptr, bias_ptr, y_ptr,
                           B, C, OC, PH, PW, s_b, s_c, s_h, s_w, s_kh, s_kw,
                           KH: tl.constexpr, KW: tl.constexpr, P: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    KTOT = C * KH * KW
    M = B * PH * PW

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)   # flattened (b, ph, pw)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)   # output channel
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < OC

    pw_i = offs_m % PW
    t = offs_m // PW
    ph_i = t % PH
    b_i = t // PH
    x_base = b_i.to(tl.int64) * s_b                      # [BLOCK_M]

    bias = tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0)
    # relu output is >= 0, so 0 is the identity for the max over the pool window
    result = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for dy in tl.static_range(P):
        for dx in tl.static_range(P):
            oh = ph_i * P + dy
            ow = pw_i * P + dx
            acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            for k0 in range(0, KTOT, BLOCK_K):
                kk = k0 + offs_k
                k_mask = kk < KTOT
                c_i = kk // (KH * KW)
                r = kk % (KH * KW)
                kh = r // KW
                kw = r % KW
                # A[m, k] = patches[b, c, oh, ow, kh, kw]
                a_off = (x_base[:, None] + c_i[None, :] * s_c + oh[:, None] * s_h + ow[:, None] * s_w
                         + kh[None, :] * s_kh + kw[None, :] * s_kw)
                a = tl.load(x_ptr + a_off, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
                # Bm[k, n] = weight[n, c, kh, kw] = w[n * KTOT + k]
                w_off = offs_n[None, :].to(tl.int64) * KTOT + kk[:, None]
                wt = tl.load(w_ptr + w_off, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
                acc = tl.dot(a, wt, acc, input_precision="ieee")
            v = tl.maximum(acc + bias[None, :], 0.0)
            result = tl.maximum(result, v)

    # y[b, n, ph, pw]
    y_off = (b_i[:, None].to(tl.int64) * OC * PH * PW + offs_n[None, :] * (PH * PW)
             + ph_i[:, None] * PW + pw_i[:, None])
    tl.store(y_ptr + y_off, result, mask=m_mask[:, None] & n_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, pool_size: int):
        super().__init__()
        # holds the parameters only (same init as the reference); its forward is never called
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.pool_size = pool_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        bias = self.conv.bias.contiguous()
        B, C, H, W = x.shape
        OC, C2, KH, KW = w.shape
        assert C == C2
        OH, OW = H - KH + 1, W - KW + 1
        P = self.pool_size
        PH, PW = OH // P, OW // P
        patches = x.unfold(2, KH, 1).unfold(3, KW, 1)  # a view: (B, C, OH, OW, KH, KW)
        y = torch.empty((B, OC, PH, PW), device=x.device, dtype=x.dtype)
        M = B * PH * PW
        if M == 0 or OC == 0:
            return y
        BLOCK_M = 64
        BLOCK_N = min(64, max(16, triton.next_power_of_2(OC)))
        BLOCK_K = 32
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(OC, BLOCK_N))
        _conv_relu_pool_kernel[grid](
            patches, w, bias, y, B, C, OC, PH, PW, *patches.stride(),
            KH=KH, KW=KW, P=P, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
            num_warps=4,
        )
        return y
