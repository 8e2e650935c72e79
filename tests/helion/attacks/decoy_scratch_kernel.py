"""Decoy: a genuine Helion kernel runs (into a buffer nobody reads), so a kernel "was launched", while forward returns
torch.relu's result.

Caught statically by `library_op` (torch.relu in forward); under `permissive` (library ops tolerated) the ablation
trial skips every launch of Helion's Triton kernel and the output is still right: `decoy_kernel`.
"""
import helion
import helion.language as hl
import torch
import torch.nn as nn


@helion.kernel(config=helion.Config(block_sizes=[8, 128]), static_shapes=True)
def relu_into(x: torch.Tensor, scratch: torch.Tensor) -> torch.Tensor:
    for tile_r, tile_c in hl.tile(x.size()):
        scratch[tile_r, tile_c] = torch.relu(x[tile_r, tile_c])
    return scratch


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        relu_into(x, torch.empty_like(x))
        return torch.relu(x)
