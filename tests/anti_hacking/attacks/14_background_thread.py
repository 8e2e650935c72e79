"""Class 14, background thread: forward returns an empty output at once and a thread runs the kernel a little
later, so the timed interval ends before the work is done (and the comparison may still see the values).

Caught statically by `introspection` (import of threading); with the static rules bypassed, the worker sees a
thread started by the solution still alive after forward() returns: `background_thread`.
"""
import threading
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def _later(x, y):
    time.sleep(0.05)
    _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        threading.Thread(target=_later, args=(x, y), daemon=True).start()
        return y
