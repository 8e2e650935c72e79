"""Shape (level1/mse_loss): the kernel does the work (squared differences, summed per row and column block, over
the whole input) and the wrapper finishes with a small epilogue reduction: `.sum(dim=1)` over the per-block
partial sums (one per 128 input elements)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sq_err_partials(p_ptr, t_ptr, out_ptr, n_cols, n_blocks, inv_n, BLOCK: tl.constexpr):
    row, blk = tl.program_id(0), tl.program_id(1)
    cols = blk * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    p = tl.load(p_ptr + row * n_cols + cols, mask=mask, other=0.0)
    t = tl.load(t_ptr + row * n_cols + cols, mask=mask, other=0.0)
    d = p - t
    tl.store(out_ptr + row * n_blocks + blk, tl.sum(d * d, axis=0) * inv_n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        pred, target = pred.contiguous(), target.contiguous()
        rows, cols = pred.shape
        block = 128
        n_blocks = triton.cdiv(cols, block)
        partials = torch.empty((rows, n_blocks), device=pred.device, dtype=torch.float32)
        _sq_err_partials[(rows, n_blocks)](pred, target, partials, cols, n_blocks, 1.0 / cols, BLOCK=block)
        return partials.sum(dim=1)
