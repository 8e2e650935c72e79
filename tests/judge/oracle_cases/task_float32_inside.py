"""A task whose Model casts its result to float32 itself: its float64 copy returns float32 too, so there is no oracle
for it and the fixed rule judges (info["correctness"]["rule"] == "fixed", with why)."""
import torch
import torch.nn as nn

batch_size = 1024
dim = 4096

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "dim": 256},
    "alt": {"batch_size": 23, "dim": 301},
    "dtype": "float32",
}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x).to(torch.float32)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
