"""Genuine: autotuned Triton elementwise GELU with helpers, asserts, dtype checks and a grid lambda."""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

_TL_DTYPE = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32}
SUPPORTED = (torch.float16, torch.bfloat16, torch.float32)


@triton.autotune(
    configs=[triton.Config({"BLOCK": 1024}, num_warps=4), triton.Config({"BLOCK": 4096}, num_warps=8)],
    key=["n"],
)
@triton.jit
def _gelu_kernel(x_ptr, y_ptr, n, OUT_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(OUT_DTYPE), mask=mask)


def _launch(x: torch.Tensor) -> torch.Tensor:
    assert x.is_cuda or x.device.type == "cpu", "unexpected device"
    assert x.dtype in SUPPORTED, f"unsupported dtype {x.dtype}"
    if not x.is_contiguous():
        x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return y
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    _gelu_kernel[grid](x, y, n, OUT_DTYPE=_TL_DTYPE[x.dtype])
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = math.sqrt(2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float32 and torch.cuda.is_available():
            _ = torch.cuda.current_stream()
        out = _launch(x.view(-1))
        return out.view(x.shape)
