"""A genuine raw-CUDA solution for c2cuda/saxpy (backend="cuda_raw"): out = a*x + y, NVRTC-compiled."""
import torch
import torch.nn as nn

from kernel_gym import cuda_raw

kernels = cuda_raw.compile(r"""
extern "C" __global__ void saxpy(long long n, float a, const float* __restrict__ x, const float* __restrict__ y,
                                 float* __restrict__ out) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        out[i] = a * x[i] + y[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.a = a

    def forward(self, x, y):
        out = torch.empty_like(y)
        n = x.numel()
        kernels.saxpy(n, float(self.a), x, y, out, grid=max(1, min((n + 255) // 256, 65535 * 8)), block=256)
        return out
