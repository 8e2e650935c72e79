"""Partial PyTorch (level2/gemm_relu), the KernelBench-style solution: its own Triton kernel does the GEMM, PyTorch
does the rest (`torch.relu`, then `torch.mul` by the scale). `permissive` accepts it (KernelBench's rule: own
kernels for part of the ops); `standard` keeps Kevin's rule and rejects it with `library_op`, naming each op left
in PyTorch and what to do about it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _xwt(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, K = x.shape
        N = self.linear.weight.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        _xwt[(triton.cdiv(M, 32), triton.cdiv(N, 32))](x, self.linear.weight, self.linear.bias, y, M, N, K,
                                                       BM=32, BN=32, BK=32)
        return torch.mul(torch.relu(y), self.scale)
