"""Class 13, side-stream offload: on cuda the kernel is launched on a private `torch.cuda.Stream`, so events
recorded on the default stream see none of its work (on cpu it runs inline).

Caught statically by `side_stream` (every preset). Dynamically (GPU only) the timer brackets the call with a
whole-device `torch.cuda.synchronize()`, so the hidden work is inside the measured interval, and the launch gate
makes torch's pooled streams wait for it: the side stream buys nothing (tests/anti_hacking/test_gpu_attacks.py).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stream = None

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if x.is_cuda:
            if self.stream is None:
                self.stream = torch.cuda.Stream()
            with torch.cuda.stream(self.stream):
                _relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        else:
            _relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
