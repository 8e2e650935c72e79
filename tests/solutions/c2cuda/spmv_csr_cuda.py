"""A genuine CUDA (load_inline) solution for c2cuda/spmv_csr: one warp per row, shuffle reduction."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void spmv_kernel(int n, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                            const float* __restrict__ vals, const float* __restrict__ x, float* __restrict__ y) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= n) return;
    float acc = 0.f;
    for (int p = row_ptr[warp] + lane; p < row_ptr[warp + 1]; p += 32) acc += vals[p] * x[col_idx[p]];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffff, acc, off);
    if (lane == 0) y[warp] = acc;
}

torch::Tensor spmv(torch::Tensor row_ptr, torch::Tensor col_idx, torch::Tensor vals, torch::Tensor x) {
    int n = x.size(0);
    auto y = torch::empty({n}, x.options());
    long threads = (long)n * 32;
    if (n > 0) spmv_kernel<<<(int)((threads + 255) / 256), 256>>>(n, row_ptr.data_ptr<int>(), col_idx.data_ptr<int>(),
                                                                  vals.data_ptr<float>(), x.data_ptr<float>(),
                                                                  y.data_ptr<float>());
    return y;
}
"""

ext = load_inline(name="c2cuda_spmv_ext",
                  cpp_sources="torch::Tensor spmv(torch::Tensor row_ptr, torch::Tensor col_idx, torch::Tensor vals, "
                              "torch::Tensor x);",
                  cuda_sources=cuda_source, functions=["spmv"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def forward(self, row_ptr, col_idx, vals, x):
        return ext.spmv(row_ptr, col_idx, vals, x)
