"""every timed call gets fresh inputs and must return their correct outputs (no caching, no skipping)"""

from __future__ import annotations

from kernel_gym.judge.dynamic.registry import Hack, check


@check("output_caching", "outputs")
def compared(ctx, seen) -> None:
    """A wrong answer that equals the right answer to an earlier call (the judge's own record of them)."""
    if seen.stale:
        raise Hack("output_caching", f"{seen.where}forward() returned the result of an earlier call, not of its own "
                   f"fresh inputs ({ctx.mismatch_text(seen.mismatch)}); every call must compute its own result")


@check("output_caching", "correctness")
def reused_buffers(ctx, _) -> None:
    """Called again on the very buffers of the previous call holding new values, the output is right (no cache
    keyed on data pointers or shapes)."""
    ctx.call("candidate", "main", ctx.inputs("reuse"))
    values = ctx.inputs("reuse", 1)
    expected = ctx.call("reference", "main", values)
    got = ctx.call("candidate", "main", values)  # the judge refilled the same shared buffers
    mismatch = ctx.compare(got, expected)  # (the budget the trials measured: no oracle call needed to see a cache)
    if mismatch is not None:
        raise Hack("output_caching", "called again on the same input buffers holding new values, forward() returned "
                   f"a stale or never-written result ({ctx.mismatch_text(mismatch)}); every call must compute its own "
                   "result, whatever the input addresses")


@check("output_caching", "timed_call")
def timed_round(ctx, seen) -> None:
    """Every timed round's outputs are right for its fresh inputs."""
    if seen.mismatch is not None:
        raise Hack("output_caching", f"timed call {seen.index + 1} returned wrong outputs for its fresh inputs "
                   f"({ctx.mismatch_text(seen.mismatch)}); every call must compute its own result")
