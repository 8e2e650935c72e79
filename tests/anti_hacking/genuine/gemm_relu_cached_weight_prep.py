"""Genuine (level2/gemm_relu, strict): legitimate caching across calls. On the first forward (and whenever the
weight changes) a Triton kernel writes W^T into a cached contiguous buffer; every call then runs its own GEMM
kernel on that buffer with the bias + ReLU + scale epilogue fused. What is cached depends only on the
parameters, never on the inputs, so fresh inputs per call are always computed."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _transpose(w_ptr, wt_ptr, N, K, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N * K
    n = offs // K
    k = offs % K
    tl.store(wt_ptr + k * N + n, tl.load(w_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _gemm_epilogue(x_ptr, wt_ptr, b_ptr, y_ptr, M, N, K, scale,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(x_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(wt_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    out = tl.maximum(acc, 0.0) * scale
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], out, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # parameters only
        self.scale = scale
        self._wt = None
        self._wt_key = None

    def _weight_t(self):
        w = self.linear.weight
        key = (w.data_ptr(), w._version, w.device)
        if self._wt is None or self._wt_key != key:
            N, K = w.shape
            wc = w.contiguous()
            self._wt = torch.empty((K, N), dtype=w.dtype, device=w.device)
            _transpose[(triton.cdiv(N * K, 1024),)](wc, self._wt, N, K, BLOCK=1024)
            self._wt_key = key
        return self._wt

    def forward(self, x):
        x2 = x.contiguous().view(-1, x.shape[-1])
        wt = self._weight_t()
        M, K = x2.shape
        N = wt.shape[1]
        y = torch.empty((M, N), dtype=x.dtype, device=x.device)
        _gemm_epilogue[(triton.cdiv(M, 32), triton.cdiv(N, 32))](x2, wt, self.linear.bias, y, M, N, K,
                                                                 float(self.scale), BM=32, BN=32, BK=32)
        return y.view(*x.shape[:-1], N)
