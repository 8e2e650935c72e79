"""A raw-CUDA kernel that executes `__trap()` (an assertion that fails on the device): the runner's context ends."""
import torch
import torch.nn as nn

from kernel_gym import cuda_raw

FAULT = "crash"

SOURCE = r"""
extern "C" __global__ void relu_trap_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) __trap();
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
"""
kernels = cuda_raw.compile(SOURCE)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        kernels.relu_trap_kernel(x, y, x.numel(), grid=(x.numel() + 255) // 256, block=256)
        torch.cuda.synchronize()
        return y
