"""Genuine under checks="standard" only (level2/gemm_relu): the GEMM + bias stays a library call (calling the
nn.Linear module), the solution's own Triton kernel does the ReLU-and-scale epilogue. `strict` rejects it
(library_op); `standard` allows exactly this (CUDA Agent's rule)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_scale(h_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(h, 0.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        h = self.linear(x).contiguous()
        y = torch.empty_like(h)
        n = h.numel()
        _relu_scale[(triton.cdiv(n, 1024),)](h, y, n, float(self.scale), BLOCK=1024)
        return y
