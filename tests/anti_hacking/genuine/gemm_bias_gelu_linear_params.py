"""Genuine (level2/gemm_bias_gelu, strict): nn.Linear is held only for its parameters (same init as the
reference; its forward is never called). Two kernels: a tiled fp32 GEMM with bias into a torch.empty buffer,
then an elementwise exact-GELU-and-scale kernel."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gemm_bias(x_ptr, w_ptr, b_ptr, h_ptr, M, N, K, sxm, sxk, swn, swk, shm, shn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(x_ptr + rm[:, None] * sxm + kk[None, :] * sxk, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + rn[None, :] * swn + kk[:, None] * swk, mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(h_ptr + rm[:, None] * shm + rn[None, :] * shn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _gelu_scale(h_ptr, y_ptr, n, mult, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask, other=0.0)
    g = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    tl.store(y_ptr + offs, g * mult, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # parameters only
        self.multiplier = multiplier

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1])
        w, b = self.linear.weight, self.linear.bias
        M, K = x2.shape
        N = w.shape[0]
        h = torch.empty((M, N), dtype=x.dtype, device=x.device)
        BM, BN, BK = 32, 32, 32
        _gemm_bias[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
            x2, w, b, h, M, N, K, x2.stride(0), x2.stride(1), w.stride(0), w.stride(1), h.stride(0), h.stride(1),
            BM=BM, BN=BN, BK=BK)
        y = torch.empty_like(h)
        _gelu_scale[(triton.cdiv(h.numel(), 1024),)](h, y, h.numel(), float(self.multiplier), BLOCK=1024)
        return y.view(*x.shape[:-1], N)
