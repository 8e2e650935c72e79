"""A DECOY CUDA solution for level1/relu: its kernel touches one element; torch computes the result."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
__global__ void touch_kernel(float* y) { if (threadIdx.x == 0 && blockIdx.x == 0) y[0] = y[0]; }
torch::Tensor touch(torch::Tensor y) {
    touch_kernel<<<1, 32>>>(y.data_ptr<float>());
    return y;
}
"""

ext = load_inline(name="decoy_ext", cpp_sources="torch::Tensor touch(torch::Tensor y);", cuda_sources=cuda_source,
                  functions=["touch"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.touch(torch.relu(x))
