"""A genuine ReLU written with CuTe (CUTLASS's tensor algebra), built by load_inline: the CUTLASS/CuTe headers come from
the installed nvidia-cutlass package (kernel_gym/harness/cutlass.py)."""

import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
#include <cute/tensor.hpp>
using namespace cute;

__global__ void relu_kernel(const float* x, float* y, int n) {
    Tensor gx = make_tensor(make_gmem_ptr(x), make_shape(n));
    Tensor gy = make_tensor(make_gmem_ptr(y), make_shape(n));
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) gy(i) = gx(i) > 0.f ? gx(i) : 0.f;
}

torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

ext = load_inline(name="cute_relu", cpp_sources="torch::Tensor relu(torch::Tensor x);", cuda_sources=CUDA,
                  functions=["relu"])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return ext.relu(x.contiguous())
