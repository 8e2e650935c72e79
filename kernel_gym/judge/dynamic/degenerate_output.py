"""outputs must carry the reference's values, not pass a loose atol by being near zero"""

from __future__ import annotations

from kernel_gym.judge.dynamic.registry import Hack, check


@check("degenerate_output", "outputs")
def compared(ctx, seen) -> None:
    """The comparison found the outputs degenerate (near zero where the reference's are not)."""
    if seen.mismatch is not None and seen.mismatch.kind == "degenerate":
        raise Hack("degenerate_output", seen.where + (seen.mismatch.where or ""))
