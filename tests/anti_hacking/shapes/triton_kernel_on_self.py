"""Shape (level1/relu): the @triton.jit kernel stored on `self` in `__init__` and launched through it from a
helper method (`self._launch`), which a module-level launcher function also uses."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def launch_relu(kernel, x: torch.Tensor, block: int) -> torch.Tensor:
    flat = x.contiguous().view(-1)
    out = torch.empty_like(flat)
    n = flat.numel()
    kernel[(triton.cdiv(n, block),)](flat, out, n, BLOCK=block)
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = _relu_kernel
        self.block = 1024

    def _launch(self, x: torch.Tensor) -> torch.Tensor:
        return launch_relu(self.kernel, x, self.block)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._launch(x)
