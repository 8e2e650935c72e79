"""Class 1, library-op substitution of the heavy op: cuBLAS via `torch.matmul` does the GEMM, a Triton kernel
only the bias + ReLU + scale epilogue (level2/gemm_relu).

Allowed by the `standard` preset (CUDA Agent's rule: the GEMM may stay a library call), rejected by `strict`
through `library_op`. There is no dynamic check for this: it is a policy, enforced statically.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _epilogue(h_ptr, b_ptr, y_ptr, n_cols, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs % n_cols, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(h + b, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        h = torch.matmul(x, self.linear.weight.t()).contiguous()
        y = torch.empty_like(h)
        n = h.numel()
        _epilogue[(triton.cdiv(n, 1024),)](h, self.linear.bias, y, h.shape[1], n, float(self.scale), BLOCK=1024)
        return y
