"""Outside-style (level1/mse_loss): the kernel computes the squared differences, the wrapper averages each row with
`.mean(dim=1)` - the loss's own mean, left to PyTorch as LLM-written solutions often do."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_diff_kernel(pred_ptr, target_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    p = tl.load(pred_ptr + offsets, mask=mask)
    t = tl.load(target_ptr + offsets, mask=mask)
    diff = p - t
    tl.store(out_ptr + offsets, diff * diff, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()  # noqa: UP008 - (the way many LLM-written solutions spell it)

    def forward(self, pred, target):
        pred = pred.contiguous()
        target = target.contiguous()
        sq = torch.empty_like(pred)
        n_elements = pred.numel()
        grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
        squared_diff_kernel[grid](pred, target, sq, n_elements, BLOCK_SIZE=1024)
        return sq.mean(dim=1)
