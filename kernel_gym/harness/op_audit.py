"""Which PyTorch compute a candidate's forward runs, seen at the dispatcher (works on cpu and cuda).

The static `library_op` rule reads the source; this audit watches what actually executes, so compute hidden from
the AST (tensor operators such as `y * (y > 0)`, functions reached through aliases) is seen too. Ops made by a
kernel launcher itself (the Triton interpreter copies tensors) are not the candidate's and are ignored.

What may stay is the policy of `kernel_gym.checks.library_policy` (allocation and views always; under `standard` the
task's heavy GEMM/conv beside other work, and a final reduction of the kernel's result where the reference ends in
that reduction). A reduction (sum/mean/amax/amin/max/min) is recorded as `<op>[final]` when it is the final step of
an own kernel's result: an own kernel ran before it in the call (or it runs inside an extension's C++ wrapper, after
its kernel), it reads none of forward's inputs, the reductions together read no more elements than the largest tensor
an own kernel was handed (one pass over the kernel's result), and no own kernel runs after it. A scalar scaling of its
result (`/ n`, `-`) is `<op>[final]` too. Any other reduction is recorded under its own name: it is the work.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernel_gym.checks import library_policy as policy
from kernel_gym.checks.library_policy import FINAL, SCALE_OPS
from kernel_gym.checks.task_policy import EPILOGUE_REDUCTIONS, TaskPolicy
from kernel_gym.harness import launches

ALLOWED = policy.ALLOCATION_OPS  # (the policy's data: allocation, views, copies, fills)
LIBRARY_GEMM = policy.GEMM_OPS
_INTERPRETER_MATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "interpreter_math.py")


class OpAudit(TorchDispatchMode):
    """Records the name of every aten op the candidate itself dispatches (final reductions as `<op>[final]`)."""

    def __init__(self, inputs: tuple = ()) -> None:
        super().__init__()
        self.ops: dict[str, int] = {}
        self.reduced = 0  # elements read by the final reductions so far
        self.inputs = {_storage(t) for t in inputs if isinstance(t, torch.Tensor)}  # forward's inputs' storages
        self.finals: set[int] = set()  # storages of final reductions' (and their scalings') results
        self.final_after = -1  # own launches counted when the first final reduction ran (-1: none yet)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if not (launches.STATE.in_launch == 0 or _from_solution()):
            return func(*args, **kwargs)
        name = func.overloadpacket.__name__
        final = (name in EPILOGUE_REDUCTIONS and self._final_reduction(args, kwargs)) or (
            name in SCALE_OPS and self._scaling(args, kwargs))
        out = func(*args, **kwargs)
        if final:
            name += FINAL
            self.finals |= {_storage(t) for t in (out if isinstance(out, (tuple, list)) else (out,))
                            if isinstance(t, torch.Tensor)}
            if self.final_after < 0:  # (inside an extension, its own launch is counted when it returns)
                self.final_after = launches.STATE.count + (1 if launches.STATE.in_extension else 0)
        self.ops[name] = self.ops.get(name, 0) + 1
        return out

    def _final_reduction(self, args: tuple, kwargs: dict) -> bool:
        """Is this reduction the final step of an own kernel's result (see the module docstring)?"""
        x = args[0] if args else kwargs.get("self")
        if not isinstance(x, torch.Tensor) or _storage(x) in self.inputs:
            return False
        if not (launches.STATE.count or launches.STATE.in_extension):
            return False
        self.reduced += int(x.numel())
        return self.reduced <= launches.STATE.largest

    def _scaling(self, args: tuple, kwargs: dict) -> bool:
        """A scalar scaling of a final reduction's result: its tensors are that result or single numbers."""
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        return bool(self.finals) and any(_storage(t) in self.finals for t in tensors) and all(
            _storage(t) in self.finals or t.numel() <= 1 for t in tensors)

    def settle(self) -> dict[str, int]:
        """The ops at the end of the call: reductions an own kernel ran after were not final (they fed it)."""
        if self.final_after < 0 or launches.STATE.count <= self.final_after:
            return self.ops
        ops: dict[str, int] = {}
        for name, n in self.ops.items():
            key = name.removesuffix(FINAL)
            ops[key] = ops.get(key, 0) + n
        return ops


def _storage(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # (a tensor without storage: never an input's)
        return -1


def _from_solution() -> bool:
    """Inside a kernel launch: True when the op was made by code of the solution's own file (a grid callable, a
    hook, a helper the launcher calls), False when the launcher made it (the Triton interpreter's copies, and the
    libdevice math it lacks, which CPU runners compute with torch: harness/interpreter_math.py). The innermost frame
    that is either decides."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if os.path.basename(name).startswith("candidate_"):
            return True
        if f"{os.sep}triton{os.sep}" in name or name == _INTERPRETER_MATH:
            return False
        frame = frame.f_back
    return False


def audit(fn: Callable[[], Any], inputs: tuple | list = ()) -> tuple[Any, dict[str, int]]:
    """Run fn (forward on `inputs`) with the audit on; returns (fn's result, {op name: count}), final reductions of
    the kernels' result as `<op>[final]`."""
    mode = OpAudit(tuple(inputs))
    state = launches.STATE
    state.track_sizes, state.largest = True, 0
    try:
        with mode:
            out = fn()
        ops = mode.settle()
    finally:
        state.track_sizes, state.largest = False, 0
    return out, ops


def forbidden(ops: dict[str, int], preset: str, task: TaskPolicy | None = None) -> list[str]:
    """The ops that the preset does not tolerate on this task, most frequent first (kernel_gym.checks.library_policy:
    `task` is kernel_gym.checks.task_policy.task_policy of the job's task source; None: an unknown task, where the
    library GEMM/conv and final reductions are tolerated)."""
    if policy.tolerates_any(preset):
        return []
    tolerated = policy.aten_tolerated(preset, task)

    def ok(name: str) -> bool:
        if name.endswith(FINAL):
            return policy.final_reduction_ok(name.removesuffix(FINAL), preset, task)
        return name in tolerated or name.rstrip("_") in tolerated

    bad = [name for name in ops if not ok(name)]
    return sorted(bad, key=lambda n: -ops[n])
