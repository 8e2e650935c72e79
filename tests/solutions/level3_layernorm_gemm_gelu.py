"""Triton solution for level3/layernorm_gemm_gelu: a row LayerNorm kernel (fp32 statistics, bf16 out), then a tiled
GEMM whose epilogue adds the bias and applies tanh-GELU before the one bf16 store.

The bf16 tiles are widened to fp32 on load and multiplied with `tl.dot(..., input_precision="tf32")`: a bf16 value
is exact in tf32, so the products are exact and the sums fp32, as a bf16 tensor-core GEMM gives (and Triton's CPU
interpreter, which cannot do bf16 arithmetic, computes the same). Stores round to nearest even by hand: the
interpreter's fp32 -> bf16 cast truncates.
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
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, D, eps, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < D
    x = tl.load(x_ptr + row * D + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / D
    diff = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(diff * diff, axis=0) / D + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * D + cols, _bf16_rne(diff * rstd * w + b), mask=mask)


@triton.jit
def _gemm_bias_gelu_kernel(a_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_mask, n_mask = rm < M, rn < N
    a_ptrs = a_ptr + rm[:, None].to(tl.int64) * K + rk[None, :]
    w_ptrs = w_ptr + rn[None, :].to(tl.int64) * K + rk[:, None]  # W is (N, K): read it as K x N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = (k0 + rk) < K
        a = tl.load(a_ptrs, mask=m_mask[:, None] & k_mask[None, :], other=0.0).to(tl.float32)
        w = tl.load(w_ptrs, mask=k_mask[:, None] & n_mask[None, :], other=0.0).to(tl.float32)
        acc = tl.dot(a, w, acc, input_precision="tf32")
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    h = acc + tl.load(bias_ptr + rn, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    z = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    tanh = 1.0 - 2.0 / (tl.exp(2.0 * z) + 1.0)
    out = 0.5 * h * (1.0 + tanh)
    y_ptrs = y_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(y_ptrs, _bf16_rne(out), mask=m_mask[:, None] & n_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, d_model: int, hidden_dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)  # the reference's parameters, made in the same order
        nn.init.normal_(self.norm.weight, 1.0, 0.1)
        nn.init.normal_(self.norm.bias, 0.0, 0.1)
        self.fc = nn.Linear(d_model, hidden_dim)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        x2 = x.reshape(-1, d).contiguous()
        m, n = x2.shape[0], self.fc.weight.shape[0]
        h = torch.empty_like(x2)
        _layernorm_kernel[(m,)](x2, self.norm.weight, self.norm.bias, h, d, self.norm.eps,
                                BLOCK_D=triton.next_power_of_2(d))
        y = torch.empty((m, n), device=x.device, dtype=x.dtype)
        block_m, block_n, block_k = 64, 64, 32
        grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
        _gemm_bias_gelu_kernel[grid](h, self.fc.weight, self.fc.bias, y, m, n, d,
                                     BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8,
                                     num_warps=4, num_stages=3)
        return y.view(*x.shape[:-1], n)
