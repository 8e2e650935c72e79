"""every call of forward must launch at least one of the solution's own kernels"""

from __future__ import annotations

from kernel_gym.judge.dynamic.registry import Hack, check


@check("no_custom_kernel", "first_call")
def first_call(ctx, call) -> None:
    """The first call launched at least one of the solution's own kernels (the runner's count)."""
    if not int(call.evidence.get("launches") or 0):
        raise Hack("no_custom_kernel", "forward() launched none of the solution's own kernels")


def _every_call(ctx) -> None:
    if ctx.calls_without_launch:
        raise Hack("no_custom_kernel", f"{ctx.calls_without_launch} later call(s) of forward() launched none of the "
                   f"solution's own kernels (the first call launched "
                   f"{ctx.signals.get('own_launches_per_call', 0):.0f}); every call must compute with them")


@check("no_custom_kernel", "correctness")
def every_call(ctx, _) -> None:
    """Every call of forward launches the solution's own kernels, not only the first."""
    _every_call(ctx)


@check("no_custom_kernel", "after_timing")
def every_timed_call(ctx, _) -> None:
    """... the timed calls included."""
    _every_call(ctx)
