"""Class 13, side-stream offload on a raw CUDA stream created outside torch's pool (a CuPy stream), wrapped as a
`torch.cuda.ExternalStream` so the Triton launch goes there. As written the stream is *blocking* (the CUDA default
for `cudaStreamCreate`); the GPU suite also submits it with `NON_BLOCKING = True`.

Caught statically by `side_stream` (either way). Dynamically (GPU only), a blocking stream waits for work queued
before it on the legacy default stream, so the timer's launch gate holds it back and the whole-device synchronize
counts it: it buys no speedup. A non-blocking one is a known gap of the launch gate: the harness cannot name such a
stream, so it does not wait for the gate, and work it runs during the gate is not counted (an expected failure;
`launch_gate=False` counts it). See tests/anti_hacking/test_gpu_attacks.py. On cpu it runs inline.
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


NON_BLOCKING = False


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
                import cupy

                self._raw = cupy.cuda.Stream(non_blocking=NON_BLOCKING)
                self.stream = torch.cuda.ExternalStream(self._raw.ptr)
            with torch.cuda.stream(self.stream):
                _relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        else:
            _relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
