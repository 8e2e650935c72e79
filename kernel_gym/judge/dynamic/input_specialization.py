"""the solution must be correct for every input, not only some seeds"""

from __future__ import annotations

from kernel_gym.eval.result import Outcome
from kernel_gym.judge.dynamic.registry import Hack, Stop, check


@check("input_specialization", "correctness")
def trials(ctx, _) -> None:
    """Correct on every one of `correctness_trials` fresh inputs (wrong on all: a mismatch; on some only: this)."""
    results = [ctx.trial("trial", i) for i in range(ctx.cfg.correctness_trials)]
    bad = [(i, m) for i, m in enumerate(results) if m is not None]
    if bad and len(bad) < len(results):
        raise Hack("input_specialization", f"correct on {len(results) - len(bad)} of {len(results)} input seeds but "
                   f"wrong on the others: {ctx.mismatch_text(bad[0][1])}. The output must depend only on the inputs "
                   "(no hard-coded values, caching, or races)")
    if bad:
        raise Stop(Outcome.MISMATCH, ctx.mismatch_text(bad[0][1]), mismatch=bad[0][1])
