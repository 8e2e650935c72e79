"""Shape (level1/leaky_relu, CUDA): a helper object (not an nn.Module) that holds the extension and launches it
from a method; ModelNew keeps one built in `__init__`."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void leaky_kernel(const float* __restrict__ x, float* __restrict__ y, float slope, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = v > 0.f ? v : v * slope; }
}

torch::Tensor leaky_forward(torch::Tensor x, double slope) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int64_t n = xc.numel();
    leaky_kernel<<<(int)((n + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), (float)slope, n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""


def build():
    return load_inline(name="kg_shape_leaky_helper", cpp_sources="torch::Tensor leaky_forward(torch::Tensor x, double slope);",
                       cuda_sources=_CUDA, functions=["leaky_forward"], verbose=False)


class LeakyRunner:
    """Owns the compiled extension and the slope."""

    def __init__(self, slope: float):
        self.ext = build()
        self.slope = slope

    def run(self, x: torch.Tensor) -> torch.Tensor:
        return self.ext.leaky_forward(x, self.slope)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.runner = LeakyRunner(negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.runner.run(x)
