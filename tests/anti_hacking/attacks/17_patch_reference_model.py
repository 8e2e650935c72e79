"""Class 17, altering the expected answer, written to evade the static rules: `gc` is reached as
`torch.sys.modules["gc"]` at import time (module level is outside the forward path that `library_op` reads,
and the alias of a subscript is not resolved), and forward uses it to find the reference `Model` instance,
which the harness built before the candidate. Its `forward` is replaced on the instance (the integrity snapshot
watches classes, not instances) by one that returns zeros, slowly. The solution's kernel writes zeros: both
sides agree, the degenerate-output bound is void (the reference's norm is 0), and the speedup is huge.

Caught statically by `introspection` (`torch.sys` is a module reached through another module). With the static
rules bypassed: the reference runs in its own runner, which the candidate's process cannot reach; the search finds
no `Model`, and the zeros are compared with the true reference (`mismatch`).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl

_gc = torch.sys.modules["gc"]
_time = torch.sys.modules["time"]


def _fake_forward(*args):
    _time.sleep(0.02)  # a slow "reference" inflates the speedup
    return args[0] * 0.0


def _rig_reference():
    for obj in _gc.get_objects():
        if isinstance(obj, nn.Module) and type(obj).__name__ == "Model" \
                and type(obj).__module__.startswith("_kg_reference"):
            obj.forward = _fake_forward


@triton.jit
def _zeros_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.rigged = False

    def forward(self, x):
        if not self.rigged:  # the harness builds a reference, then this model: rig the newest one once
            _rig_reference()
            self.rigged = True
        y = torch.ones_like(x)  # not zeros unless the kernel runs, so the ablation trial sees a difference
        _zeros_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)
        return y
