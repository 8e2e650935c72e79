"""A C++ (load_inline, no CUDA) solution for level1/relu: on the CPU backend the judge's build service builds it and
it runs for real (tests/sandbox/test_builds.py: the whole build path, tested without a GPU). The static rules still
call it `no_kernel` (a solution's own kernels are CUDA or Triton), so the tests hand it to the judge directly."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
    torch::Tensor xc = x.contiguous();
    torch::Tensor y = xc.new_empty(xc.sizes());
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (long i = 0, n = xc.numel(); i < n; ++i) {
        out[i] = in[i] > 0.f ? in[i] : 0.f;
    }
    return y;
}
"""

relu_ext = load_inline(name="relu_cpp", cpp_sources=cpp_source, functions=["relu_forward"])


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_forward(x)
