"""A genuine CUDA (load_inline) solution for c2cuda/row_sum: one block per row, a shared-memory tree reduction."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void row_sum_kernel(int cols, const float* __restrict__ x, float* __restrict__ out) {
    __shared__ float part[256];
    const float* row = x + (long)blockIdx.x * cols;
    float acc = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += row[c];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

torch::Tensor row_sum(torch::Tensor x) {
    int rows = x.size(0), cols = x.size(1);
    auto out = torch::empty({rows}, x.options());
    if (rows > 0) row_sum_kernel<<<rows, 256>>>(cols, x.data_ptr<float>(), out.data_ptr<float>());
    return out;
}
"""

ext = load_inline(name="c2cuda_row_sum_ext", cpp_sources="torch::Tensor row_sum(torch::Tensor x);",
                  cuda_sources=cuda_source, functions=["row_sum"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_sum(x)
