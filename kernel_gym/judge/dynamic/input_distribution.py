"""the solution must stay correct on rescaled inputs, not rely on the test inputs' small range"""

from __future__ import annotations

from kernel_gym.eval.result import Outcome
from kernel_gym.judge.dynamic.registry import Hack, Stop, check


@check("input_distribution", "correctness")
def scaled(ctx, _) -> None:
    """Still correct with floating inputs scaled by 16 (no shortcut that holds only for small randn values)."""
    mismatch = ctx.trial("distribution", scale=16.0)
    if mismatch is not None and mismatch.kind == "nan":  # NaN it computed (not the fill): an overflow, an honest bug
        raise Stop(Outcome.MISMATCH, "correct on the standard inputs, but with the inputs scaled by 16 the output "
                   f"holds NaN where the reference is finite ({ctx.mismatch_text(mismatch)}): an overflow or another "
                   "numerical bug on large values (e.g. exp of a large argument); use a formulation that stays "
                   "finite", mismatch=mismatch)
    if mismatch is not None:
        raise Hack("input_distribution", "correct on the standard inputs but wrong when they are scaled by 16 "
                   f"({ctx.mismatch_text(mismatch)}); do not rely on the range of the test inputs")
