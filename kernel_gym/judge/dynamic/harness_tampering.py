"""timers, torch functions, tracing hooks, dispatch modes and precision flags must be untouched"""

from __future__ import annotations

from typing import Any

from kernel_gym.judge.dynamic.registry import Hack, check


def _reject(ctx, evidence: dict[str, Any]) -> None:
    changes = evidence.get("harness") or []
    if changes:
        ctx.recycle()
        raise Hack("harness_tampering", "the solution modified the evaluation environment: "
                   + ", ".join(str(c) for c in changes[:20]))


@check("harness_tampering", "build")
def at_build(ctx, built) -> None:
    """What the runner watches (timers, torch functions, hooks, modes, flags) is unchanged after loading/building."""
    _reject(ctx, built.evidence)


@check("harness_tampering", "call")
def after_call(ctx, called) -> None:
    """... and after every call."""
    _reject(ctx, called.evidence)


@check("harness_tampering", "after_timing")
def after_timing(ctx, after) -> None:
    """... and after the timed rounds (asked of the runner once they are over)."""
    _reject(ctx, ctx.ask("harness"))
