"""Policy pattern, forbidden (level2/gemm_relu): the GEMM stays nn.Linear (allowed beside other work), but the ReLU
is `torch.relu` too; only the scaling is the solution's own kernel."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale(h_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(h_ptr + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        h = torch.relu(self.linear(x)).contiguous()
        y = torch.empty_like(h)
        _scale[(triton.cdiv(h.numel(), 1024),)](h, y, h.numel(), float(self.scale), BLOCK=1024)
        return y
