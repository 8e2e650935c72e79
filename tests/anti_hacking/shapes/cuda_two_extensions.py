"""Shape (level2/gemm_relu, CUDA): two load_inline extensions in one solution, one for the GEMM (x @ W^T, tiled
fp32) and one for the bias + ReLU + scale epilogue; the weights are an nn.Linear's, read, never called."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_GEMM = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#define TILE 32

// y[m, n] = sum_k x[m, k] * w[n, k]
__global__ void gemm_xwt(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                         int M, int N, int K) {
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
    if (row < M && col < N) y[(int64_t)row * N + col] = acc;
}

torch::Tensor gemm_forward(torch::Tensor x, torch::Tensor w) {
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    int M = xc.size(0), K = xc.size(1), N = wc.size(0);
    auto y = torch::empty({M, N}, xc.options());
    dim3 threads(TILE, TILE);
    dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    gemm_xwt<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(), M, N, K);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_EPILOGUE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void bias_relu_scale(float* __restrict__ y, const float* __restrict__ b, float scale, int64_t n, int cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) { float v = y[i] + b[i % cols]; y[i] = (v > 0.f ? v : 0.f) * scale; }
}

torch::Tensor epilogue_forward(torch::Tensor y, torch::Tensor b, double scale) {
    int64_t n = y.numel();
    bias_relu_scale<<<(int)((n + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), b.data_ptr<float>(), (float)scale, n, (int)y.size(1));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

gemm_ext = load_inline(name="kg_shape_two_ext_gemm", cpp_sources="torch::Tensor gemm_forward(torch::Tensor x, torch::Tensor w);",
                       cuda_sources=_GEMM, functions=["gemm_forward"], verbose=False)
epilogue_ext = load_inline(name="kg_shape_two_ext_epilogue",
                           cpp_sources="torch::Tensor epilogue_forward(torch::Tensor y, torch::Tensor b, double scale);",
                           cuda_sources=_EPILOGUE, functions=["epilogue_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = gemm_ext.gemm_forward(x, self.linear.weight)
        return epilogue_ext.epilogue_forward(y, self.linear.bias, self.scale)
