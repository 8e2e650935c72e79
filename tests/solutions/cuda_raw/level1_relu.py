"""A genuine raw-CUDA solution for level1/relu: an NVRTC-compiled grid-stride kernel (backend="cuda_raw")."""
import torch
import torch.nn as nn

from kernel_gym import cuda_raw

SOURCE = r"""
extern "C" __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        float v = x[i];
        y[i] = v > 0.f ? v : 0.f;
    }
}
"""

kernels = cuda_raw.compile(SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        threads = 256
        blocks = max(1, min((n + threads - 1) // threads, 65535 * 8))
        kernels.relu_kernel(x, y, n, grid=blocks, block=threads)
        return y
