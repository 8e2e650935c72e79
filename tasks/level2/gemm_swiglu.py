"""SwiGLU feed-forward gate: [a, g] = x @ W^T + b split in two halves, y = silu(g) * a."""
import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
hidden = 2048

KERNEL_GYM = {
    "cpu": {"batch_size": 32, "in_features": 64, "hidden": 24},
    "alt": {"batch_size": 41, "in_features": 53, "hidden": 19},
    "full_alt": {"batch_size": 2111, "in_features": 3999, "hidden": 2049},
    "dtype": "float32",
}


class Model(nn.Module):
    """One nn.Linear producing 2 * hidden features, split into a value half and a gate half;
    the output is silu(gate) * value, shape (batch_size, hidden).
    """

    def __init__(self, in_features: int, hidden: int):
        super().__init__()
        self.linear = nn.Linear(in_features, 2 * hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        value, gate = self.linear(x).chunk(2, dim=-1)
        return torch.nn.functional.silu(gate) * value


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden]
