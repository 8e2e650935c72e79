"""Genuine: a Triton kernel behind torch.autograd.Function, plus a lazily built, cached CUDA
extension called from an own nn.Module submodule; module-level optional import."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils.cpp_extension import load_inline

try:
    from triton.language.extra import libdevice  # noqa: F401
except ImportError:  # older triton
    libdevice = None

CUDA_SRC = """
#include <torch/extension.h>

template <typename scalar_t>
__global__ void bias_add_kernel(const scalar_t* x, const scalar_t* b, scalar_t* y, int64_t n, int64_t c, int64_t hw) {
    int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + b[(i / hw) % c];
}

torch::Tensor bias_add(torch::Tensor x, torch::Tensor b) {
    auto y = torch::empty_like(x);
    int64_t n = x.numel(), c = b.numel(), hw = x.size(2) * x.size(3);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "bias_add", ([&] {
        bias_add_kernel<scalar_t><<<(n + 255) / 256, 256>>>(
            x.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n, c, hw);
    }));
    return y;
}
"""
CPP_SRC = "torch::Tensor bias_add(torch::Tensor x, torch::Tensor b);"
_EXT = None


def _get_ext():
    global _EXT
    if _EXT is None:
        _EXT = load_inline(name="bias_add_ext", cpp_sources=CPP_SRC, cuda_sources=CUDA_SRC,
                           functions=["bias_add"])
    return _EXT


@triton.jit
def _tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    tl.store(y_ptr + offs, tl.where(x >= 0, t, -t), mask=mask)


class _TanhFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.empty_like(x)
        n = x.numel()
        _tanh_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y


class BiasAdd(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        return _get_ext().bias_add(x, self.bias)


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bias_add = BiasAdd(channels)

    @torch.no_grad()
    def forward(self, x):
        x = _TanhFn.apply(x.contiguous())
        return self.bias_add(x)
