"""Triton solution for level2/gemm_bias_gelu: tiled fp32 GEMM (x @ W^T) with fused bias + erf-GELU + multiply epilogue."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_gelu_mul_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
                            stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                            multiplier,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < N
    a_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :] * stride_xk
    b_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :].to(tl.int64) * stride_wn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = (k0 + offs_k) < K
        a = tl.load(a_ptrs, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BLOCK_K * stride_xk
        b_ptrs += BLOCK_K * stride_wk
    bias = tl.load(bias_ptr + offs_n, mask=n_mask, other=0.0)
    h = acc + bias[None, :]
    # exact GELU: 0.5 * h * (1 + erf(h / sqrt(2)))
    g = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))
    out = g * multiplier
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, out, mask=m_mask[:, None] & n_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, multiplier: float):
        super().__init__()
        # holds the parameters only (same init as the reference); its forward is never called
        self.linear = nn.Linear(in_features, out_features)
        self.multiplier = multiplier

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        K = x.shape[-1]
        x2 = x.reshape(-1, K)
        M = x2.shape[0]
        w = self.linear.weight
        b = self.linear.bias
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        if M > 0 and N > 0:
            BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32
            grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
            _linear_gelu_mul_kernel[grid](
                x2, w, b, y, M, N, K,
                x2.stride(0), x2.stride(1), w.stride(0), w.stride(1), y.stride(0), y.stride(1),
                float(self.multiplier),
                BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=8,
                num_warps=4, num_stages=3,
            )
        return y.view(*lead, N)
