"""Genuine: CUDA via load_inline; a __global__ kernel and a wrapper using torch::empty_like."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>

// y = max(x, 0) * scale
__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, float scale, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = (v > 0.f ? v : 0.f) * scale;
    }
}

torch::Tensor relu_scale_cuda(torch::Tensor x, double scale) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    const int threads = 256;
    const int blocks = (int)((n + threads - 1) / threads);
    auto stream = at::cuda::getCurrentCUDAStream();
    relu_scale_kernel<<<blocks, threads, 0, stream>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), (float)scale, n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y.view(x.sizes());
}
"""

cpp_source = "torch::Tensor relu_scale_cuda(torch::Tensor x, double scale);"

relu_scale = load_inline(
    name="relu_scale",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_scale_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.ops = relu_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ops.relu_scale_cuda(x, self.scale)
