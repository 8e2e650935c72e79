"""Shape (level1/relu, CUDA): the C++ wrapper allocates its output with `torch::zeros` (a fill kernel on the
device) and the kernel stores only the positive values; filling the solution's own output is not library
compute, even when it takes about as long as the kernel."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_positive_store(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; if (v > 0.f) y[i] = v; }
}

torch::Tensor relu_zeros(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::zeros(xc.sizes(), xc.options());
    int64_t n = xc.numel();
    relu_positive_store<<<(int)((n + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ext = load_inline(name="kg_shape_relu_zeros", cpp_sources="torch::Tensor relu_zeros(torch::Tensor x);",
                  cuda_sources=_CUDA, functions=["relu_zeros"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu_zeros = ext.relu_zeros

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu_zeros(x)
