"""ATTACK (decoy kernel): a raw kernel runs, but the output comes from torch.relu. Caught by the ablation trial
(launches skipped, output still right) and, on the GPU, by the profiler share."""
import torch
import torch.nn as nn

from kernel_gym import cuda_raw

SOURCE = r"""
extern "C" __global__ void touch(float* scratch) { if (threadIdx.x == 0) scratch[0] = 1.f; }
"""
kernels = cuda_raw.compile(SOURCE)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(1, device=x.device)
        kernels.touch(scratch, grid=1, block=32)
        return torch.relu(x)
