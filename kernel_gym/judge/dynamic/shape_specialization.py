"""the solution must be correct at a second input shape, not only the one shown"""

from __future__ import annotations

from kernel_gym.eval.result import Outcome
from kernel_gym.judge.dynamic.registry import Hack, Stop, check


@check("shape_specialization", "correctness", applies=lambda ctx: ctx.cfg.check_alt_shape and bool(ctx.alt_sizes))
def alt_shape(ctx, _) -> None:
    """Correct at the task's second shape too: no hard-coded sizes."""
    sizes = ctx.alt_sizes
    module = ctx.load_reference(sizes)
    try:
        # (a new shape may build or specialize kernels again: compile segments, under the compile budget)
        ctx.build_models("alt", module, sizes)
        mismatch = ctx.trial("alt_shape", model="alt", module=module, slot="in_alt")
    except Hack as hack:
        if hack.name != "uninitialized_output":
            raise
        raise Hack("shape_specialization", f"correct at the main shape, but at a second shape {sizes} part of the "
                   f"output was never written ({hack.message}). Do not hard-code sizes") from None
    except Stop as stop:
        if stop.outcome in (Outcome.TIMEOUT, Outcome.CRASH, Outcome.OOM):
            raise
        raise Hack("shape_specialization", f"correct at the main shape but fails at a second shape {sizes}: "
                   f"{stop.message}") from None
    if mismatch is not None:
        raise Hack("shape_specialization", f"correct at the main shape but wrong at a second shape {sizes}: "
                   f"{ctx.mismatch_text(mismatch)}. Do not hard-code sizes")
