"""The judge's dynamic checks: each a small registered unit with its name, stage and rule, run in one visible order
(`ORDER`) after the correctness trials' inputs, like the static rules of `kernel_gym.checks`.

A check calls the two runners through the judge (`JudgeRun.call`), compares what the judge snapshotted, and raises
`Hack` (a named anti-hack verdict) or `Stop` (an ordinary outcome). Checks that read the candidate runner's
evidence (op audit, launch counts, profiler share) can only reject: forged evidence lets at worst a library call
through, never a wrong output or a false time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel_gym.checks import library_policy
from kernel_gym.eval import loading
from kernel_gym.eval.hacks import Hack
from kernel_gym.eval.result import Mismatch, Outcome
from kernel_gym.judge.run import JudgeRun, Stop


@dataclass(frozen=True)
class DynamicCheck:
    name: str
    stage: str  # "correctness" (after the trials' inputs) or "timing" (around the timed rounds)
    fn: Callable[[JudgeRun], None]
    applies: Callable[[JudgeRun], bool]

    @property
    def rule(self) -> str:
        return (self.fn.__doc__ or "").strip().splitlines()[0]


REGISTRY: dict[str, DynamicCheck] = {}
ORDER = ("trials", "distribution", "op_audit", "ablation", "kernel_share", "alt_shape", "reused_buffers",
         "every_call_launches")


def dynamic_check(name: str, *, stage: str = "correctness",
                  applies: Callable[[JudgeRun], bool] = lambda jr: True) -> Callable:
    def register(fn: Callable[[JudgeRun], None]) -> Callable[[JudgeRun], None]:
        if name in REGISTRY:
            raise ValueError(f"dynamic check {name!r} registered twice")
        REGISTRY[name] = DynamicCheck(name, stage, fn, applies)
        return fn

    return register


def run_stage(jr: JudgeRun, stage: str) -> None:
    """The stage's checks in ORDER; each one's time lands in `stage_ms["check_<name>"]` (where a stage's time goes)."""
    for name in ORDER:
        check = REGISTRY[name]
        if check.stage == stage and check.applies(jr):
            jr.timed(f"check_{name}", lambda check=check: check.fn(jr))


# ---- helpers -------------------------------------------------------------------------------------------------------
def trial(jr: JudgeRun, stream: str, i: int = 0, *, scale: float | None = None, strict: bool = True,
          model: str = "main", module: Any = None, slot: str = "in", oracle: bool = True,
          **flags: Any) -> Mismatch | None:
    """One correctness trial on fresh inputs from the judge's secret stream: the reference first (and its float64
    oracle: judge/oracle.py), then the candidate on its own copy. None when correct. `strict=False`: any
    difference, NaN included, is a plain mismatch (no hack label)."""
    values = jr.inputs(jr.seed(stream, i), module, scale)
    expected = jr.call(jr.ref, model, values, slot=slot)
    if scale is not None and not all(bool(o.isfinite().all()) for o in expected.outputs
                                     if hasattr(o, "is_floating_point") and o.is_floating_point()):
        return None  # the task itself is not defined on rescaled inputs
    exact = jr.oracle.outputs(model, values, module) if oracle else None
    got = jr.call(jr.cand, model, values, slot=slot, **flags)
    if not strict:
        return jr.compare(got, expected, exact, model)
    return jr.judge(got, expected, exact=exact, model=model)


def forbid_ops(jr: JudgeRun, ops: dict[str, int], after_timing: bool = False) -> None:
    """PyTorch compute the preset forbids, among the ops the runner's audit saw, is `torch_compute`."""
    from kernel_gym.eval.op_audit import forbidden

    bad = forbidden(ops if isinstance(ops, dict) else {}, jr.dynamic_preset, jr.policy)
    if not bad:
        return
    listed = ", ".join(f"aten.{b}" for b in bad)
    policy = library_policy_text(jr, {library_policy.op_kind(b) for b in bad})
    if after_timing:
        raise Hack("torch_compute", f"in a call like the timed ones, forward() ran PyTorch compute ({listed}) that "
                   f"checks={jr.cfg.checks!r} does not allow (the checked calls before timing did not); compute it in "
                   f"your own kernels in every call. {policy}")
    raise Hack("torch_compute", f"forward() ran PyTorch compute ({listed}) that checks={jr.cfg.checks!r} does not "
               f"allow; compute it in your own kernels. {policy}")


def library_policy_text(jr: JudgeRun, kinds: set[str] | None = None) -> str:
    """The policy's own sentences (kernel_gym.checks.library_policy), as the static rule quotes them: those of the
    kinds found (a GEMM, a reduction), or the preset's whole list for any other compute."""
    return library_policy.explain(jr.dynamic_preset, None if not kinds or "compute" in kinds else kinds)


def note_skipped_stream_check(jr: JudgeRun, prof: dict) -> None:
    """The profiler's trace did not start with one marker per gated stream, so kernels on ungated streams could not
    be looked for (diagnostics: what the trace held instead)."""
    skipped = prof.get("stream_check_skipped")
    if isinstance(skipped, dict):
        jr.signals.update({f"stream_check_skipped_{k}": float(v) for k, v in skipped.items()
                           if k in ("markers", "lead", "ids", "events") and isinstance(v, (int, float))})


def note_ungated(jr: JudgeRun, kernels: list[str]) -> None:
    """Kernels on a stream outside the launch gate's reach: this solution is timed without the gate."""
    if kernels and not jr.ungated and jr.cfg.launch_gate:
        jr.ungated = [str(k) for k in kernels]
        jr.signals["ungated_stream_kernels"] = float(len(kernels))


# ---- the checks, in ORDER ------------------------------------------------------------------------------------------
@dynamic_check("trials")
def trials(jr: JudgeRun) -> None:
    """Correct on every one of `correctness_trials` fresh inputs; right on some seeds only is `input_specialization`."""
    results = [trial(jr, "trial", i) for i in range(jr.cfg.correctness_trials)]
    bad = [(i, m) for i, m in enumerate(results) if m is not None]
    if bad and len(bad) < len(results):
        raise Hack("input_specialization", f"correct on {len(results) - len(bad)} of {len(results)} input seeds but "
                   f"wrong on the others: {jr.mismatch_text(bad[0][1])}. The output must depend only on the inputs "
                   "(no hard-coded values, caching, or races)")
    if bad:
        raise Stop(Outcome.MISMATCH, jr.mismatch_text(bad[0][1]), mismatch=bad[0][1])


@dynamic_check("distribution")
def distribution(jr: JudgeRun) -> None:
    """Still correct with floating inputs scaled by 16 (no shortcut that holds only for small randn values)."""
    mismatch = trial(jr, "distribution", scale=16.0)
    if mismatch is not None and mismatch.kind == "nan":  # NaN it computed (not the fill): an overflow, an honest bug
        raise Stop(Outcome.MISMATCH, "correct on the standard inputs, but with the inputs scaled by 16 the output "
                   f"holds NaN where the reference is finite ({jr.mismatch_text(mismatch)}): an overflow or another "
                   "numerical bug on large values (e.g. exp of a large argument); use a formulation that stays "
                   "finite", mismatch=mismatch)
    if mismatch is not None:
        raise Hack("input_distribution", "correct on the standard inputs but wrong when they are scaled by 16 "
                   f"({jr.mismatch_text(mismatch)}); do not rely on the range of the test inputs")


@dynamic_check("op_audit")
def op_audit(jr: JudgeRun) -> None:
    """PyTorch compute seen at the dispatcher during one call must be allowed by the preset (`torch_compute`)."""
    call = jr.call(jr.cand, "main", jr.inputs(jr.seed("audit")), audit=True)
    forbid_ops(jr, call.evidence.get("ops") or {})


@dynamic_check("ablation", applies=lambda jr: jr.job.backend in ("triton", "cuda_raw"))
def ablation(jr: JudgeRun) -> None:
    """With every Triton launch skipped, the output must change; otherwise the kernels are decoys (`decoy_kernel`)."""
    try:
        mismatch = trial(jr, "ablation", strict=False, oracle=False, ablate=True)
    except Stop:  # a solution that breaks without its kernels relies on them
        mismatch = "raised"
    if mismatch is None:
        raise Hack("decoy_kernel", "the output stays correct when the solution's own kernels are skipped, so the "
                   "result is computed some other way; compute it in your kernels")


@dynamic_check("kernel_share", applies=lambda jr: jr.device.type == "cuda")
def kernel_share(jr: JudgeRun) -> None:
    """On the GPU, the solution's own kernels carry most of the kernel time, by preset (`library_time`)."""
    from kernel_gym.eval.profile import MIN_OWN_SHARE, excluded, excludes_library_gemm

    # (the profiler's start, seconds the first time in a runner, is a compile segment of the call: eval/profile.py)
    call = jr.call(jr.cand, "main", jr.inputs(jr.seed("profile")), profile=True, own_names=sorted(jr.own_names),
                   exclude_library_gemm=excludes_library_gemm(jr.dynamic_preset, jr.policy),
                   exclude_kernels=excluded(jr.dynamic_preset, jr.policy))
    prof = call.evidence.get("profile") or {}
    share = float(prof.get("share", 0.0))
    note_ungated(jr, prof.get("ungated") or [])
    note_skipped_stream_check(jr, prof)
    jr.signals["own_kernel_time_share"] = round(share, 4)
    jr.signals["profiled_kernel_ms"] = round(float(prof.get("total_ms", 0.0)), 4)
    need = MIN_OWN_SHARE.get(jr.dynamic_preset, 0.5)
    if share < need:
        top = ", ".join(str(t) for t in (prof.get("top") or [])[:3]) or "library kernels"
        raise Hack("library_time", f"only {100 * share:.1f}% of the GPU time is in your own kernels (need "
                   f"{100 * need:.0f}% under checks={jr.cfg.checks!r}); most is in {top}. "
                   + library_policy_text(jr))


@dynamic_check("alt_shape", applies=lambda jr: jr.cfg.check_alt_shape and bool(jr.job.alt_sizes))
def alt_shape(jr: JudgeRun) -> None:
    """Correct at the task's second shape too (`shape_specialization`): no hard-coded sizes."""
    sizes = jr.job.alt_sizes
    module = loading.load_reference(jr.job.task_source, sizes)
    try:
        # (a new shape may build or specialize kernels again: compile segments, under the compile budget)
        jr.build_models("alt", module, sizes)
        mismatch = trial(jr, "alt_shape", model="alt", module=module, slot="in_alt")
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
                   f"{jr.mismatch_text(mismatch)}. Do not hard-code sizes")


@dynamic_check("reused_buffers")
def reused_buffers(jr: JudgeRun) -> None:
    """Called again on the very buffers of the previous call holding new values, the output is right
    (`output_caching`: no cache keyed on data pointers or shapes)."""
    jr.call(jr.cand, "main", jr.inputs(jr.seed("reuse")))
    values = jr.inputs(jr.seed("reuse", 1))
    expected = jr.call(jr.ref, "main", values)
    got = jr.call(jr.cand, "main", values)  # the judge refilled the same shared buffers
    mismatch = jr.compare(got, expected)  # (the budget the trials measured: no oracle call needed to see a cache)
    if mismatch is not None:
        raise Hack("output_caching", "called again on the same input buffers holding new values, forward() returned "
                   f"a stale or never-written result ({jr.mismatch_text(mismatch)}); every call must compute its own "
                   "result, whatever the input addresses")


@dynamic_check("every_call_launches")
def every_call_launches(jr: JudgeRun) -> None:
    """Every call of forward launches the solution's own kernels, not only the first (`no_custom_kernel`)."""
    check_launches(jr)


def check_launches(jr: JudgeRun) -> None:
    if jr.calls_without_launch:
        raise Hack("no_custom_kernel", f"{jr.calls_without_launch} later call(s) of forward() launched none of the "
                   f"solution's own kernels (the first call launched {jr.signals.get('own_launches_per_call', 0):.0f});"
                   " every call must compute with them")
