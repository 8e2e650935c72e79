"""Shape (level2/gemm_bias_gelu, CUDA): a custom nn.Module helper with its own `__init__` parameter setup
(`nn.init.kaiming_uniform_` and `nn.init.uniform_`, nn.Linear's scheme, so the weights match the reference's under
the same seed) whose forward calls one fused GEMM + bias + exact GELU + multiplier kernel."""
import math

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#define TILE 32

__global__ void linear_gelu(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                            float* __restrict__ y, int M, int N, int K, float mult) {
    __shared__ float xs[TILE][TILE];
    __shared__ float ws[TILE][TILE + 1];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    int wrow = blockIdx.x * TILE + threadIdx.y;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        xs[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? x[(int64_t)row * K + k0 + threadIdx.x] : 0.f;
        ws[threadIdx.y][threadIdx.x] = (wrow < N && k0 + threadIdx.x < K) ? w[(int64_t)wrow * K + k0 + threadIdx.x] : 0.f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) acc += xs[threadIdx.y][k] * ws[threadIdx.x][k];
        __syncthreads();
    }
    if (row < M && col < N) {
        float v = acc + b[col];
        y[(int64_t)row * N + col] = 0.5f * v * (1.f + erff(v * 0.70710678118654752f)) * mult;
    }
}

torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double mult) {
    auto xc = x.contiguous();
    int M = xc.size(0), K = xc.size(1), N = w.size(0);
    auto y = torch::empty({M, N}, xc.options());
    dim3 threads(TILE, TILE);
    dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    linear_gelu<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), M, N, K, (float)mult);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

fused = load_inline(name="kg_shape_linear_gelu_init",
                    cpp_sources="torch::Tensor linear_gelu_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double mult);",
                    cuda_sources=_CUDA, functions=["linear_gelu_forward"], verbose=False)


class LinearGELU(nn.Module):
    def __init__(self, in_features: int, out_features: int, multiplier: float):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        self.multiplier = multiplier
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        fan_in = self.weight.shape[1]
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fused.linear_gelu_forward(x, self.weight, self.bias, self.multiplier)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, multiplier: float):
        super().__init__()
        self.block = LinearGELU(in_features, out_features, multiplier)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)
