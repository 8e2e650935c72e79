"""A task whose outputs are ~1e-5: y = tanh(x) * 1e-5. The fixed rule's atol (1e-4) is ten times the outputs here,
so a bf16 round trip of input and result (0.3 % relative error) passed it."""
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
        return torch.tanh(x) * 1e-5


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
