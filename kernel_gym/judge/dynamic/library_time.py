"""on the GPU, the solution's own kernels must carry the work (profiler share of kernel time)"""

from __future__ import annotations

from kernel_gym.judge.dynamic.registry import Hack, check


@check("library_time", "correctness", applies=lambda ctx: ctx.device.type == "cuda")
def kernel_share(ctx, _) -> None:
    """On the GPU, the solution's own kernels carry most of the kernel time under the profiler, by preset."""
    from kernel_gym.harness.profile import MIN_OWN_SHARE, excluded, excludes_library_gemm

    # (the profiler's start, seconds the first time in a runner, is a compile segment of the call: harness/profile.py)
    call = ctx.call("candidate", "main", ctx.inputs("profile"), profile=True, own_names=ctx.own_names,
                    exclude_library_gemm=excludes_library_gemm(ctx.preset, ctx.policy),
                    exclude_kernels=excluded(ctx.preset, ctx.policy))
    prof = call.evidence.get("profile") or {}
    share = float(prof.get("share", 0.0))
    ctx.note_ungated(prof.get("ungated") or [])
    ctx.note_skipped_stream_check(prof)
    ctx.note(own_kernel_time_share=round(share, 4), profiled_kernel_ms=round(float(prof.get("total_ms", 0.0)), 4))
    need = MIN_OWN_SHARE.get(ctx.preset, 0.5)
    if share < need:
        top = ", ".join(str(t) for t in (prof.get("top") or [])[:3]) or "library kernels"
        raise Hack("library_time", f"only {100 * share:.1f}% of the GPU time is in your own kernels (need "
                   f"{100 * need:.0f}% under checks={ctx.cfg.checks!r}); most is in {top}. " + ctx.policy_text())
