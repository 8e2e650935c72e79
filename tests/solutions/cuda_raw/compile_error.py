"""A raw-CUDA solution whose kernel does not compile (an undeclared identifier): NVRTC's log is the feedback."""
import torch
import torch.nn as nn

from kernel_gym import cuda_raw

SOURCE = r"""
extern "C" __global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], zero_value);
}
"""
kernels = cuda_raw.compile(SOURCE)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        kernels.relu_kernel(x, y, x.numel(), grid=(x.numel() + 255) // 256, block=256)
        return y
