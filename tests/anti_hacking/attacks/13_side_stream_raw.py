"""Class 13, side-stream offload on a raw CUDA stream created outside torch's pool (a CuPy stream), wrapped as a
`torch.cuda.ExternalStream` so the Triton launch goes there. As written the stream is *blocking* (the CUDA default
for `cudaStreamCreate`) and used from the first call; the GPU suite also submits it with `NON_BLOCKING = True`,
and with `FROM_CALL` set past the checks so the stream is used only in timed calls.

Caught statically by `side_stream` (either way). Dynamically (GPU only), the timer synchronizes the whole device
inside the interval, and the launch gate cannot hold a stream outside torch's pool (a non-blocking one would run
during the gate, unseen): the profiler shows a kernel on a stream the gate does not hold, before timing or in a
profiled gated call after it, and the solution is timed without the gate. It buys no speedup either way. See
tests/anti_hacking/test_gpu_attacks.py. On cpu it runs inline.
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
FROM_CALL = 0  # the side stream is used from this call on


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stream = None
        self.calls = 0

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        self.calls += 1
        if x.is_cuda and self.calls > FROM_CALL:
            if self.stream is None:
                import cupy

                self._raw = cupy.cuda.Stream(non_blocking=NON_BLOCKING)
                self.stream = torch.cuda.ExternalStream(self._raw.ptr)
            with torch.cuda.stream(self.stream):
                _relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        else:
            _relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
