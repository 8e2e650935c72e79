"""Genuine: CUDA row-sum with shared memory, warp shuffles, a CUDAGuard, PYBIND11_MODULE and
an extension object built in __init__ and kept on self."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); exit(1); } } while (0)

__inline__ __device__ float warp_sum(float v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffff, v, off);
    return v;
}

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    extern __shared__ float smem[];
    int row = blockIdx.x;
    float acc = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += x[(long)row * cols + c];
    acc = warp_sum(acc);
    if ((threadIdx.x & 31) == 0) smem[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < (blockDim.x >> 5) ? smem[threadIdx.x] : 0.f;
        acc = warp_sum(acc);
        if (threadIdx.x == 0) y[row] = acc;
    }
}

torch::Tensor row_sum(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2 && x.is_contiguous(), "2-D contiguous input expected");
    const at::cuda::OptionalCUDAGuard guard(device_of(x));
    auto y = torch::empty({x.size(0)}, x.options());
    int threads = 256;
    auto stream = at::cuda::getCurrentCUDAStream();
    row_sum_kernel<<<x.size(0), threads, (threads / 32) * sizeof(float), stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(0), (int)x.size(1));
    CUDA_CHECK(cudaGetLastError());
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("row_sum", &row_sum, "row sum (CUDA)");
}
'''


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim
        self.ext = load_inline(name="row_sum_ext", cpp_sources="", cuda_sources=SRC, verbose=False,
                               extra_cuda_cflags=["-O3", "--use_fast_math"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.contiguous().view(-1, x.shape[-1])
        return self.ext.row_sum(x2).view(x.shape[:-1])
