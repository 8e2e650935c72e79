"""Outside-style (task_mse_scalar, KernelBench's MSELoss): the kernel squares the differences, the wrapper returns
`torch.mean` of all of them - the reference's own final mean."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mse_kernel(predictions_ptr, targets_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    diff = tl.load(predictions_ptr + offsets, mask=mask) - tl.load(targets_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, diff * diff, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        predictions = predictions.contiguous()
        targets = targets.contiguous()
        squared = torch.empty_like(predictions)
        n = predictions.numel()
        mse_kernel[(triton.cdiv(n, 1024),)](predictions, targets, squared, n, BLOCK_SIZE=1024)
        return torch.mean(squared)
