"""Attack (level1/matmul, CUDA; the hack of issue 22): the C++ wrapper calls `torch::matmul` for the whole task and
launches a token kernel (it copies one element) so that an own `__global__` kernel runs. It scored 1.3 (speedup
1.0) under `standard` before the single-GEMM policy: now `library_op` (static) rejects it; dynamically, with the
task policy passed to the op audit, `torch_compute`; on cuda the library GEMM counts in the profiler's total."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void touch(float* c) { if (threadIdx.x == 0 && blockIdx.x == 0) c[0] = c[0]; }

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    auto C = torch::matmul(A, B);
    touch<<<1, 32, 0, at::cuda::getCurrentCUDAStream()>>>(C.data_ptr<float>());
    return C;
}
"""

ext = load_inline(name="kg_attack_matmul_token", cpp_sources="torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);",
                  cuda_sources=_CUDA, functions=["matmul_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.matmul_cuda = ext.matmul_cuda

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return self.matmul_cuda(A, B)
