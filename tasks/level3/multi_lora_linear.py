"""Batched multi-LoRA linear layer: a base GEMM plus each token's own low-rank adapter.

Batched multi-LoRA linear layer (serving several fine-tunes at once): a shared base GEMM plus, for each token,
the low-rank update of the adapter that token's request uses."""
import torch
import torch.nn as nn

num_tokens = 8192
in_features = 4096
out_features = 4096
rank = 16
n_adapters = 8
lora_scale = 2.0

KERNEL_GYM = {
    "cpu": {"num_tokens": 32, "in_features": 48, "out_features": 40, "rank": 4, "n_adapters": 3},
    "alt": {"num_tokens": 45, "in_features": 52, "out_features": 36, "rank": 6, "n_adapters": 5},
    "full_alt": {"num_tokens": 6001, "in_features": 5120, "out_features": 3000, "rank": 8, "n_adapters": 12},
    "dtype": "bfloat16",
}


class Model(nn.Module):
    """y_i = W x_i + b + lora_scale * B[a_i] (A[a_i] x_i), with a_i the adapter id of token i, A[a] (rank x in) and
    B[a] (out x rank). Computed densely: x through every adapter's A, the other adapters' parts zeroed, then one
    GEMM against all B's stacked."""

    def __init__(self, in_features: int, out_features: int, rank: int, n_adapters: int, lora_scale: float):
        super().__init__()
        self.rank, self.n_adapters, self.lora_scale = rank, n_adapters, lora_scale
        self.base = nn.Linear(in_features, out_features)
        self.lora_a = nn.Parameter(torch.randn(n_adapters, rank, in_features) * in_features ** -0.5)
        self.lora_b = nn.Parameter(torch.randn(n_adapters, out_features, rank) * rank ** -0.5)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor, adapter: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        down = (x @ self.lora_a.reshape(-1, x.shape[1]).t()).view(n, self.n_adapters, self.rank)
        chosen = adapter[:, None] == torch.arange(self.n_adapters, device=x.device)
        down = down * chosen[..., None].to(x.dtype)
        stacked_b = self.lora_b.permute(0, 2, 1).reshape(-1, self.lora_b.shape[1])  # (adapters * rank, out)
        return self.base(x) + (down.reshape(n, -1) @ stacked_b) * self.lora_scale


def get_inputs():
    return [torch.randn(num_tokens, in_features, dtype=torch.bfloat16), torch.randint(0, n_adapters, (num_tokens,))]


def get_init_inputs():
    return [in_features, out_features, rank, n_adapters, lora_scale]
