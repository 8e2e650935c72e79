"""A genuine CUDA (load_inline) solution for c2cuda/saxpy: out = a*x + y, grid-stride, a new output tensor."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void saxpy_kernel(long n, float a, const float* __restrict__ x, const float* __restrict__ y,
                             float* __restrict__ out) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        out[i] = a * x[i] + y[i];
    }
}

torch::Tensor saxpy(double a, torch::Tensor x, torch::Tensor y) {
    auto out = torch::empty_like(y);
    long n = x.numel();
    int threads = 256;
    int blocks = (int)std::min<long>((n + threads - 1) / threads, 65535L * 8);
    if (n > 0) saxpy_kernel<<<blocks, threads>>>(n, (float)a, x.data_ptr<float>(), y.data_ptr<float>(),
                                                 out.data_ptr<float>());
    return out;
}
"""

ext = load_inline(name="c2cuda_saxpy_ext", cpp_sources="torch::Tensor saxpy(double a, torch::Tensor x, torch::Tensor y);",
                  cuda_sources=cuda_source, functions=["saxpy"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.a = a

    def forward(self, x, y):
        return ext.saxpy(self.a, x, y)
