"""every output element must be written by the solution (outputs are NaN-filled before each call)"""

from __future__ import annotations

from kernel_gym.judge.dynamic.registry import Hack, check
from kernel_gym.judge.nan import unwritten


@check("uninitialized_output", "outputs")
def compared(ctx, seen) -> None:
    """NaN where the reference is finite, with the bits of the fill the judge writes before every call: memory
    the kernels never wrote. A NaN the candidate computed (an overflow) stays a mismatch (judge/nan.py)."""
    m = seen.mismatch
    if m is not None and m.kind == "nan" and unwritten(seen.got.outputs, seen.expected.outputs, ctx.device):
        raise Hack("uninitialized_output", f"{seen.where}the output holds NaN where the reference is finite "
                   f"({ctx.mismatch_text(m)}), with the bits of the fill that output memory gets before every call: "
                   "memory your kernels never wrote (stale or partial output)")
