"""No kernel at all: a @helion.kernel function without an hl.tile loop is plain PyTorch (here the whole GEMM).

Caught statically by `no_kernel` and `library_op`; Helion itself refuses to compile it (NoDeviceLoopsInKernel).
"""
import helion
import torch
import torch.nn as nn


@helion.kernel(config=helion.Config(block_sizes=[]))
def matmul_whole(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


class ModelNew(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul_whole(A, B)
