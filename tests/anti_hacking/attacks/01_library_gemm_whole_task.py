"""Class 1, library-op substitution of the whole task (level1/matmul): `torch.matmul` does the task's only op, a
Triton kernel copies its result so that an own kernel runs and carries the output.

`standard` lets a library GEMM stay only beside other work of the task (kernel_gym.checks.task_policy): on a
single-GEMM task it is the task, so `library_op` rejects it (before this policy it scored ~1.3 under `standard`).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        c = torch.matmul(A, B)
        out = torch.empty_like(c)
        n = c.numel()
        _copy[(triton.cdiv(n, 1024),)](c, out, n, BLOCK=1024)
        return out
