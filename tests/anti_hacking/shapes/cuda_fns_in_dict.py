"""Shape (level1/gelu, CUDA): extension functions kept in a dict on `self` and looked up by name in forward."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void gelu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }
}

torch::Tensor gelu_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int64_t n = xc.numel();
    gelu_kernel<<<(int)((n + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

gelu_module = load_inline(name="kg_shape_gelu_dict", cpp_sources="torch::Tensor gelu_forward(torch::Tensor x);",
                          cuda_sources=_CUDA, functions=["gelu_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ops = {"gelu": gelu_module.gelu_forward}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ops["gelu"](x)
