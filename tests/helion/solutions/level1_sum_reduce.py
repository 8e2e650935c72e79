"""Helion solution for level1/sum_reduce: the reduced dimension moved last, one program per block of rows."""
import helion
import helion.language as hl
import torch
import torch.nn as nn


@helion.kernel(config=helion.Config(block_sizes=[8], reduction_loops=[None]), static_shapes=True)
def row_sum(x: torch.Tensor) -> torch.Tensor:
    rows, _cols = x.size()
    out = torch.empty([rows], dtype=x.dtype, device=x.device)
    for tile_r in hl.tile(rows):
        out[tile_r] = torch.sum(x[tile_r, :], dim=1)
    return out


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        moved = x.movedim(self.dim, -1).contiguous()
        flat = moved.reshape(-1, moved.shape[-1])
        return row_sum(flat).reshape(moved.shape[:-1])
