"""The order of one judged job, top to bottom: compile -> correctness checks -> kernel signals -> timing -> roofline
signals. Each stage's time lands in `stage_ms`; the verdicts are the registered checks' (judge/dynamic/), run here
at their stages. `execute` is what the pool calls."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

from kernel_gym.eval.result import EvalResult, Outcome, Timing
from kernel_gym.judge import measure, models, outcome
from kernel_gym.judge.clock import ContextStuck
from kernel_gym.judge.dynamic import Hack, Stop, run_stage
from kernel_gym.judge.dynamic.context import Built, Context
from kernel_gym.judge.gpu_lock import SharedHold, cpu_lock, device_lock
from kernel_gym.judge.run import JudgeRun
from kernel_gym.judge.runners import RunnerFailure, others_stopped


def execute(jr: JudgeRun) -> EvalResult:
    """The job's result: correct with its timing, or the verdict that ended it."""
    ctx = Context(jr)
    try:
        timing = run(jr, ctx)
    except Hack as hack:
        return outcome.result(jr, Outcome.REJECTED, hack.message, hacks=(hack.name,), hack_details=(hack.message,))
    except Stop as stop:
        return outcome.result(jr, stop.outcome, stop.message, **stop.fields)
    except RunnerFailure as failure:
        return outcome.runner_failure(jr, failure)
    except ContextStuck:  # a timed call's work never ended: this job's timeout, and the judge's context is lost
        jr.context_stuck = True
        return outcome.runner_failure(jr, RunnerFailure("timeout", "call"))
    finally:
        # the job's outputs go with its verdict: the "call" checks close over the context (jr.inspect), a cycle only
        # the collector would break, and an idle judge allocates too little to run it (on an H100 a full-size relu
        # job left 9.4 GiB held after the judge's idle release)
        jr.inspect = None
        ctx.close()
    return outcome.result(jr, Outcome.CORRECT, "", timing=timing)


def run(jr: JudgeRun, ctx: Context) -> Timing:
    jr.stage = "compile"
    jr.timed("compile", lambda: compile_stage(jr, ctx))
    jr.budget.run_deadline = time.monotonic() + jr.cfg.run_timeout_s
    jr.stage = "correctness"
    with shared_gpu(jr):
        jr.timed("correctness", lambda: run_stage(ctx, "correctness"))
    jr.timed("kernel_signals", lambda: kernel_signals(jr))
    jr.stage = "timing"
    # nothing else on this GPU while a job is timed: the job waits as long as it takes (every holder's calls are
    # bounded by their own limits), and the wait is reported, never timed
    with device_lock(jr.device, exclusive=True, timeout_s=float("inf")) as wait, quiet_others(jr) as missed:
        jr.stage_ms["gpu_lock_wait"] = round(wait.seconds * 1e3, 3)
        if not wait.acquired or missed:  # said, never hidden: what ran beside these timed calls
            jr.signals["timing_not_exclusive"] = 1.0
            jr.signals["runners_not_stopped"] = float(len(missed or []))
        timing = jr.timed("timing", lambda: measure.timing(jr, ctx))
    with shared_gpu(jr):
        jr.timed("roofline_signals", lambda: roofline_signals(jr, timing))
    return timing


def quiet_others(jr: JudgeRun) -> contextlib.AbstractContextManager:
    """cuda: the judge's other candidate runners stopped while this job is timed (judge/runners.py)."""
    if (jr.device.type != "cuda" and not cpu_lock()) or os.environ.get("KERNEL_GYM_STOP_OTHERS", "1") == "0":
        return contextlib.nullcontext()
    return others_stopped(keep=(jr.cand.runner, jr.ref.runner))


@contextlib.contextmanager
def shared_gpu(jr: JudgeRun) -> Iterator[None]:
    """GPU work other than timing: beside other jobs' such work, never while one of them is being timed. The share
    is let go of while the job's runner compiles (judge/budget.py), so a compile never holds up a timer."""
    hold = SharedHold(jr.device)
    waited = hold.take()
    jr.stage_ms["gpu_shared_wait"] = round(jr.stage_ms.get("gpu_shared_wait", 0.0) + waited * 1e3, 3)
    jr.budget.hold = hold
    try:
        yield
    finally:
        jr.budget.hold = None
        hold.let_go()


def compile_stage(jr: JudgeRun, ctx: Context) -> None:
    """Load both sides (load_inline builds in the candidate's runner), build Model and ModelNew under the same seed,
    learn the reference's outputs, then the candidate's first call (Triton JIT): it must launch its own kernels."""
    for side in (jr.cand, jr.ref):
        side.runner.mark_job_start()
        side.runner.request("begin", deadline=jr.deadline("compile"), stage="compile")
    jr.ref.runner.request("load", deadline=jr.deadline("compile"), stage="compile", kind="reference", name="main",
                          source=jr.job.task_source, sizes=jr.job.sizes)
    evidence = jr.cand.runner.request("load", deadline=jr.deadline("compile"), stage="compile", kind="candidate",
                                      name="main", source=jr.job.code)
    if "error" in evidence:
        jr.fail(evidence["error"], jr.cand)
    run_stage(ctx, "build", Built(evidence, "importing the solution"))
    jr.stage = "first_call"
    # outside the GPU lock: a ModelNew may build its extension in __init__ (CPU work that must not hold up timers)
    ctx.build_models("main", jr.module, jr.job.sizes)
    if hasattr(jr.module, "Baseline"):  # a C task's PyTorch baseline: what speedup is measured against
        models.build_reference(jr, "timed", "main", "Baseline", jr.init_inputs())
    values = jr.inputs(jr.seed("first_call"))
    with shared_gpu(jr):
        ctx.remember(jr.call(jr.ref, "main", values))  # what a later call that repeats this answer would be repeating
        call = jr.call(jr.cand, "main", values, record=True)
    jr.compiled = True
    jr.own_names |= set(call.evidence.get("names") or [])
    jr.signals["own_launches_per_call"] = float(int(call.evidence.get("launches") or 0))
    run_stage(ctx, "first_call", call)


def kernel_signals(jr: JudgeRun) -> None:
    """Structure and registers/occupancy of a correct candidate, from its runner (information: never a verdict)."""
    reply = jr.cand.runner.request("signals_before", deadline=jr.deadline(), stage="correctness", code=jr.job.code,
                                   backend=jr.job.backend, dtype=jr.job.dtype, allow_precision=jr.job.allow_precision)
    jr.signals.update({k: float(v) for k, v in (reply.get("signals") or {}).items() if isinstance(v, (int, float))})


def roofline_signals(jr: JudgeRun, timing: Timing) -> None:
    """The task's bytes and FLOPs and, on a known GPU, the roofline signals (the reference runner's work)."""
    _, spec, _ = jr.place_inputs(jr.ref, jr.inputs(jr.seed("signals")))
    reply = jr.ref.runner.request("signals_after", deadline=jr.deadline(), stage="timing", model=jr.timed_model,
                                  inputs=spec, slot_in="in", code=jr.job.code, backend=jr.job.backend,
                                  dtype=jr.job.dtype, allow_precision=jr.job.allow_precision,
                                  runtime_ms=timing.runtime_ms, baseline_ms=timing.baseline_ms)
    jr.signals.update(reply.get("signals") or {})
