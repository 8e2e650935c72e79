"""Row sums of shifted values, the shift taken off again: y_i = sum_j (x_ij + 1000) - 1000 * dim. In float32 the
running sum of values near 1000 loses ~1e-2 of the result's ~16 to rounding (the reference's own error against exact
arithmetic), so any other summation order differs from the reference by far more than the fixed rule's 1e-4."""
import torch
import torch.nn as nn

batch_size = 1024
dim = 4096

KERNEL_GYM = {
    "cpu": {"batch_size": 64, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "dtype": "float32",
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + 1000.0).sum(dim=1) - 1000.0 * x.shape[1]


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
