"""Policy pattern, forbidden (level1/mse_loss): the row sums of the kernel's squared differences feed a second kernel
(which divides them by the row length): a library reduction in the middle of the work, not its final step."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sq_diff(p_ptr, t_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(p_ptr + offs, mask=mask) - tl.load(t_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, d * d, mask=mask)


@triton.jit
def _scale(s_ptr, out_ptr, n, inv, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(s_ptr + offs, mask=mask) * inv, mask=mask)


class ModelNew(nn.Module):
    def forward(self, pred, target):
        pred, target = pred.contiguous(), target.contiguous()
        rows, cols = pred.shape
        sq = torch.empty_like(pred)
        _sq_diff[(triton.cdiv(pred.numel(), 1024),)](pred, target, sq, pred.numel(), BLOCK=1024)
        sums = sq.sum(dim=1)
        out = torch.empty_like(sums)
        _scale[(triton.cdiv(rows, 1024),)](sums, out, rows, 1.0 / cols, BLOCK=1024)
        return out
