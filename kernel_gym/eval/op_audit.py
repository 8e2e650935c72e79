"""Which PyTorch compute a candidate's forward runs, seen at the dispatcher (works on cpu and cuda).

The static `library_op` rule reads the source; this audit watches what actually executes, so compute hidden from
the AST (tensor operators such as `y * (y > 0)`, functions reached through aliases) is seen too. Ops made by a
kernel launcher itself (the Triton interpreter copies tensors) are not the candidate's and are ignored.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode

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


class OpAudit(TorchDispatchMode):
    """Records the name of every aten op the candidate itself dispatches."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if launches.STATE.in_launch == 0 or _from_solution():
            name = func.overloadpacket.__name__
            self.ops[name] = self.ops.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


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
    """Run fn with the audit on; returns (fn's result, {op name: count})."""
    mode = OpAudit()
    with mode:
        out = fn()
    return out, mode.ops


def forbidden(ops: dict[str, int], preset: str) -> list[str]:
    """The ops that the preset does not tolerate, most frequent first."""
    tolerated = TOLERATED.get(preset, ALLOWED)
    if tolerated is None:
        return []
    bad = [name for name in ops if name not in tolerated and name.rstrip("_") not in tolerated]
    return sorted(bad, key=lambda n: -ops[n])
