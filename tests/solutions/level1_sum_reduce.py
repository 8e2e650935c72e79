"""Triton solution for level1/sum_reduce: view input as (outer, R, inner) and sum over R."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sum_mid_kernel(x_ptr, y_ptr, R, INNER, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr):
    pid_o = tl.program_id(0).to(tl.int64)
    pid_i = tl.program_id(1)
    offs_i = pid_i * BLOCK_I + tl.arange(0, BLOCK_I)
    offs_r = tl.arange(0, BLOCK_R)
    i_mask = offs_i < INNER
    base = x_ptr + pid_o * R * INNER
    acc = tl.zeros([BLOCK_R, BLOCK_I], dtype=tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rr = r0 + offs_r
        ptrs = base + rr[:, None].to(tl.int64) * INNER + offs_i[None, :]
        x = tl.load(ptrs, mask=(rr[:, None] < R) & i_mask[None, :], other=0.0)
        acc += x.to(tl.float32)
    total = tl.sum(acc, axis=0)
    tl.store(y_ptr + pid_o * INNER + offs_i, total, mask=i_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.dim % x.dim()
        shape = list(x.shape)
        R = shape[d]
        outer = 1
        for s in shape[:d]:
            outer *= s
        inner = 1
        for s in shape[d + 1:]:
            inner *= s
        out_shape = shape[:d] + shape[d + 1:]
        xc = x.contiguous()
        y = torch.empty((outer, inner), device=x.device, dtype=x.dtype)
        if outer == 0 or inner == 0:
            return y.view(out_shape)
        if R == 0:
            # empty reduction -> zeros; still produced by a kernel-free allocation path
            y = torch.zeros((outer, inner), device=x.device, dtype=x.dtype)
            return y.view(out_shape)
        BLOCK_I = min(triton.next_power_of_2(inner), 256)
        BLOCK_R = max(1, min(triton.next_power_of_2(R), 4096 // BLOCK_I))
        BLOCK_R = min(BLOCK_R, 64)
        grid = (outer, triton.cdiv(inner, BLOCK_I))
        _sum_mid_kernel[grid](xc, y, R, inner, BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, num_warps=4)
        return y.view(out_shape)
