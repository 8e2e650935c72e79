"""Hidden library call: a "Helion kernel" whose host code (outside its hl.tile loop) computes the whole GEMM with
torch.matmul (cuBLAS on a GPU) and whose device loop only multiplies the result by 1.

Caught statically by `library_op` (the host code of a Helion kernel is PyTorch, as forward is); with the static
rules bypassed, the op audit sees aten.mm: `torch_compute`; under `permissive`, the ablation trial (Helion's Triton
launch skipped, the output still right): `decoy_kernel`.
"""
import helion
import helion.language as hl
import torch
import torch.nn as nn


@helion.kernel(config=helion.Config(block_sizes=[32, 32]), static_shapes=True, dot_precision="ieee")
def matmul_tiles(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.matmul(a, b)
    for tile_m, tile_n in hl.tile(out.size()):
        out[tile_m, tile_n] = out[tile_m, tile_n] * 1.0
    return out


class ModelNew(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return matmul_tiles(A, B)
