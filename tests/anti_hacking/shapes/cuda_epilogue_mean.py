"""Shape (level1/mse_loss, CUDA): the kernel does the work (squared differences over the whole input, reduced per
row and 256-column chunk) and the C++ wrapper finishes with a small epilogue, `.mean(1)` over the per-chunk values
(one per 256 input elements)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#define CHUNK 256

// part[r, c] = (sum over the chunk of (p - t)^2) * n_chunks / n_cols, so that mean over c is the row's MSE
__global__ void sq_err_chunks(const float* __restrict__ p, const float* __restrict__ t, float* __restrict__ part,
                              int n_cols, int n_chunks) {
    __shared__ float buf[CHUNK];
    int row = blockIdx.y, chunk = blockIdx.x, col = chunk * CHUNK + threadIdx.x;
    float d = 0.f;
    if (col < n_cols) { d = p[(int64_t)row * n_cols + col] - t[(int64_t)row * n_cols + col]; }
    buf[threadIdx.x] = d * d;
    __syncthreads();
    for (int s = CHUNK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[(int64_t)row * n_chunks + chunk] = buf[0] * ((float)n_chunks / (float)n_cols);
}

torch::Tensor mse_rows(torch::Tensor pred, torch::Tensor target) {
    auto p = pred.contiguous();
    auto t = target.contiguous();
    int rows = p.size(0), cols = p.size(1);
    int n_chunks = (cols + CHUNK - 1) / CHUNK;
    auto part = torch::empty({rows, n_chunks}, p.options());
    sq_err_chunks<<<dim3(n_chunks, rows), CHUNK, 0, at::cuda::getCurrentCUDAStream()>>>(
        p.data_ptr<float>(), t.data_ptr<float>(), part.data_ptr<float>(), cols, n_chunks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return part.mean(1);
}
"""

mse_ext = load_inline(name="kg_shape_mse_epilogue_mean", cpp_sources="torch::Tensor mse_rows(torch::Tensor pred, torch::Tensor target);",
                      cuda_sources=_CUDA, functions=["mse_rows"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return mse_ext.mse_rows(pred, target)
