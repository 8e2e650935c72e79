"""PyTorch compute seen at the dispatcher during forward() must be allowed by the preset"""

from __future__ import annotations

from kernel_gym.checks import library_policy
from kernel_gym.judge.dynamic.registry import Hack, check


def _reject(ctx, ops: dict, after_timing: bool = False) -> None:
    bad = ctx.forbidden(ops)
    if not bad:
        return
    listed = ", ".join(f"aten.{b}" for b in bad)
    policy = ctx.policy_text({library_policy.op_kind(b) for b in bad})
    if after_timing:
        raise Hack("torch_compute", f"in a call like the timed ones, forward() ran PyTorch compute ({listed}) that "
                   f"checks={ctx.cfg.checks!r} does not allow (the checked calls before timing did not); compute it "
                   f"in your own kernels in every call. {policy}")
    raise Hack("torch_compute", f"forward() ran PyTorch compute ({listed}) that checks={ctx.cfg.checks!r} does not "
               f"allow; compute it in your own kernels. {policy}")


@check("torch_compute", "correctness")
def op_audit(ctx, _) -> None:
    """The ops the runner's dispatcher audit saw during one call are allowed by the preset."""
    call = ctx.call("candidate", "main", ctx.inputs("audit"), audit=True)
    _reject(ctx, call.evidence.get("ops") or {})


@check("torch_compute", "after_timing")
def like_a_timed_call(ctx, after) -> None:
    """One more call through the clock, like a timed round, under the op audit (and, gated, the profiler, which
    also finds kernels on streams the launch gate does not hold): a solution that behaves only while checked is
    seen as it is timed."""
    if after.again:  # (made after the first timing; the second, ungated, needs no other)
        return
    call = ctx.timed("after_timing_check", lambda: ctx.timed_call("after_timing", audit=True, profile=ctx.gated,
                                                                  own_names=ctx.own_names))
    _reject(ctx, call.evidence.get("ops") or {}, after_timing=True)
    prof = call.evidence.get("profile") or {}
    ctx.note_ungated(prof.get("ungated") or [])
    ctx.note_skipped_stream_check(prof)
