"""Which PyTorch compute a candidate's forward runs, seen at the dispatcher (works on cpu and cuda).

The static `library_op` rule reads the source; this audit watches what actually executes, so compute hidden from
the AST (tensor operators such as `y * (y > 0)`, functions reached through aliases) is seen too. Ops made by a
kernel launcher itself (the Triton interpreter copies tensors) are not the candidate's and are ignored.

Under `standard` a small epilogue may stay in PyTorch (kernel_gym.checks.task_policy): reductions
(sum/mean/amax/amin/max/min) that together read at most half as many elements as the largest tensor the solution's
own kernels were handed in that call (averaging the kernel's per-row losses, summing its per-block partial sums).
They are recorded as `<op>[epilogue]`; a reduction past that budget (of an input, of a kernel's full-size output,
or row by row in a loop) is recorded under its own name: it is the work.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernel_gym.checks.task_policy import EPILOGUE_REDUCTIONS, TaskPolicy
from kernel_gym.eval import launches

# Allocation, views, copies, metadata and fills: what a solution may do around its kernels in every preset.
ALLOWED = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like ones ones_like full full_like
new_zeros new_ones new_full fill fill_ zero zero_ arange scalar_tensor lift_fresh lift_fresh_copy
view _unsafe_view view_as reshape _reshape_alias as_strided as_strided_ expand expand_as permute transpose
transpose_ t t_ squeeze squeeze_ unsqueeze unsqueeze_ flatten unflatten slice select split split_with_sizes
chunk unbind narrow movedim alias detach detach_ clone contiguous copy copy_ _to_copy to _copy_from
_copy_from_and_resize resize_ set_ _local_scalar_dense item sym_size sym_stride sym_numel sym_storage_offset
is_same_size is_nonzero _has_compatible_shallow_copy_type dim size stride numel _version record_stream
unfold diagonal view_as_real view_as_complex narrow_copy unsafe_split unsafe_split_with_sizes unsafe_chunk
empty_permuted resize_as_ is_pinned _reshape_copy view_copy as_strided_copy expand_copy permute_copy
transpose_copy t_copy squeeze_copy unsqueeze_copy slice_copy select_copy split_copy unbind_copy
diagonal_copy unfold_copy alias_copy detach_copy _unsafe_view_copy is_contiguous is_complex is_floating_point
""".split())
# The heavy library ops the `standard` preset lets a solution keep.
LIBRARY_GEMM = frozenset("""
mm addmm bmm baddbmm matmul linear _addmm_activation convolution _convolution conv1d conv2d conv3d
cudnn_convolution convolution_overrideable conv_transpose1d conv_transpose2d conv_transpose3d
cudnn_convolution_transpose mkldnn_convolution _mkldnn_convolution _convolution_mode _slow_conv2d_forward
slow_conv3d_forward thnn_conv2d slow_conv_transpose2d slow_conv_transpose3d mv dot einsum
""".split())
# Which ops each anti-hack preset tolerates in a candidate's forward (None: any).
TOLERATED = {"strict": ALLOWED, "kevin-strict": ALLOWED, "standard": ALLOWED | LIBRARY_GEMM, "permissive": None,
             "none": ALLOWED | LIBRARY_GEMM}
EPILOGUE = "[epilogue]"  # suffix of an op recorded as a small epilogue (see the module docstring)


class OpAudit(TorchDispatchMode):
    """Records the name of every aten op the candidate itself dispatches."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[str, int] = {}
        self.reduced = 0  # elements read by the epilogue reductions so far

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if launches.STATE.in_launch == 0 or _from_solution():
            name = func.overloadpacket.__name__
            if name in EPILOGUE_REDUCTIONS and self._epilogue(args, kwargs or {}):
                name += EPILOGUE
            self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))

    def _epilogue(self, args: tuple, kwargs: dict) -> bool:
        """Does this reduction stay within the epilogue budget (half the largest tensor an own kernel was handed)?"""
        x = args[0] if args else kwargs.get("self")
        if not isinstance(x, torch.Tensor):
            return False
        self.reduced += int(x.numel())
        return 2 * self.reduced <= launches.STATE.largest


def _from_solution() -> bool:
    """Inside a kernel launch: True when the op was made by code of the solution's own file (a grid callable, a
    hook, a helper the launcher calls), False when the launcher made it (the Triton interpreter's copies). The
    innermost frame that is either decides."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if os.path.basename(name).startswith("candidate_"):
            return True
        if f"{os.sep}triton{os.sep}" in name:
            return False
        frame = frame.f_back
    return False


def audit(fn: Callable[[], Any]) -> tuple[Any, dict[str, int]]:
    """Run fn with the audit on; returns (fn's result, {op name: count}), small epilogues as `<op>[epilogue]`."""
    mode = OpAudit()
    state = launches.STATE
    state.track_sizes, state.largest = True, 0
    try:
        with mode:
            out = fn()
    finally:
        state.track_sizes, state.largest = False, 0
    return out, mode.ops


def forbidden(ops: dict[str, int], preset: str, task: TaskPolicy | None = None) -> list[str]:
    """The ops that the preset does not tolerate, most frequent first.

    `task` (kernel_gym.checks.task_policy.task_policy of the job's task source) applies `standard`'s task policy:
    no library GEMM/conv on a task that is one GEMM/conv (or has none), no epilogue on a task that is reductions
    only or does not reduce. Without it (None) the library GEMM/conv and small epilogues are tolerated."""
    tolerated = TOLERATED.get(preset, ALLOWED)
    if tolerated is None:
        return []
    epilogue = preset == "standard" and (task is None or task.epilogue_reduction or not task.known)
    if preset == "standard" and task is not None and not task.library_gemm:
        tolerated = ALLOWED

    def ok(name: str) -> bool:
        if name.endswith(EPILOGUE):
            return epilogue
        return name in tolerated or name.rstrip("_") in tolerated

    bad = [name for name in ops if not ok(name)]
    return sorted(bad, key=lambda n: -ops[n])
