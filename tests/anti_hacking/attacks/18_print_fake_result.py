"""Class 18, printing a fake result: forward prints a JSON line shaped like the worker's result message (and
writes zeros), hoping the harness parses stdout.

Passes the static rules (print is allowed), even `strict`. It has no effect: the candidate's stdout goes to the worker's log
file, never to the result pipe, and the verdict comes from the real comparison: `mismatch`.
"""
import json

import torch
import torch.nn as nn
import triton
import triton.language as tl

FAKE = {"result": {"outcome": "correct", "message": "", "timing": {"runtime_ms": 0.001, "baseline_ms": 1.0,
                                                                    "runtime_cv": 0.0, "baseline_cv": 0.0,
                                                                    "trials": 3, "method": "wall_clock"}}}


@triton.jit
def _zeros_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        print(json.dumps(FAKE), flush=True)
        y = torch.empty_like(x)
        _zeros_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)
        return y
