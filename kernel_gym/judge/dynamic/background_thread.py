"""no thread started by the solution may still run after forward() returns"""

from __future__ import annotations

from kernel_gym.judge.dynamic.registry import Hack, check


@check("background_thread", "build")
def at_build(ctx, built) -> None:
    """Importing the solution or constructing ModelNew started no thread (the runner's evidence)."""
    if built.evidence.get("threads_started"):
        raise Hack("background_thread", f"{built.what} started a thread; do all work inside forward()")


@check("background_thread", "call")
def after_call(ctx, called) -> None:
    """No thread the solution started is still running when forward() returns (the runner's evidence)."""
    if called.evidence.get("stray_threads"):
        raise Hack("background_thread", f"the forward left {called.evidence['stray_threads']} thread(s) running "
                   f"({called.evidence.get('stray_name', '?')}); all work must finish inside forward()")
