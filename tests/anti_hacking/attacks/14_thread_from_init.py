"""Class 14, background thread started in `__init__` (before the harness's per-call thread snapshot): forward
launches a token kernel on the first 1024 elements, enqueues the real work and returns at once; the long-lived thread runs the kernel while the harness
is busy with other things (the reference's call), so the timed interval holds none of the work.

Caught statically by `introspection` (threading). With the static rules bypassed: `background_thread` (a
thread started by the solution, at import, construction or call, must not outlive the call).
"""
import queue
import threading

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def _serve(jobs):
    while True:
        x, y = jobs.get()
        _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.jobs = queue.Queue()
        threading.Thread(target=_serve, args=(self.jobs,), daemon=True).start()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _relu_kernel[(1,)](x, y, min(x.numel(), 1024), BLOCK=1024)  # a token launch, so forward "has" a kernel
        self.jobs.put((x, y))
        return y
