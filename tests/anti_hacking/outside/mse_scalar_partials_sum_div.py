"""Outside-style (task_mse_scalar): each program reduces its block of squared differences to one partial sum; the
wrapper adds the partial sums and divides by the count (`partials.sum() / n`): the final sum and a scalar scaling."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _block_sq_sum(p_ptr, t_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = tl.load(p_ptr + offs, mask=mask, other=0.0) - tl.load(t_ptr + offs, mask=mask, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(d * d, axis=0))


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        p, t = predictions.contiguous().view(-1), targets.contiguous().view(-1)
        n = p.numel()
        n_blocks = triton.cdiv(n, 1024)
        partials = torch.empty(n_blocks, device=p.device, dtype=torch.float32)
        _block_sq_sum[(n_blocks,)](p, t, partials, n, BLOCK=1024)
        return partials.sum() / n
