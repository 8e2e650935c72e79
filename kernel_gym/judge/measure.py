"""The timing stage, on the judge's clock: candidate and reference alternate on fresh inputs each round (which side
goes first alternates too), every round's outputs are compared, rounds go on until both medians are known to
`timing_rel_se`; every round's outputs checked ("timed_call"), then the "after_timing" checks (one more audited call
like a timed round, the launch count of every call, the harness).
"""

from __future__ import annotations

import os
import time
from typing import Any

from kernel_gym.eval.result import Timing
from kernel_gym.harness.timing import c_reference_signals, cv, median, median_rel_se
from kernel_gym.judge.clock import calibrate, make_clock
from kernel_gym.judge.dynamic import run_stage
from kernel_gym.judge.dynamic.context import AfterTiming, Context, TimedRound
from kernel_gym.judge.run import JudgeRun

WARMUP_S = 0.1  # on cuda, the reference keeps the GPU busy this long right before timing (clocks up)


def timing(jr: JudgeRun, ctx: Context) -> Timing:
    """Gated unless the candidate runs kernels on a stream the gate cannot hold (then timed again without it); the
    "after_timing" checks after each."""
    gate = jr.cfg.launch_gate and jr.device.type == "cuda" and not jr.ungated
    result = measure(jr, ctx, gate)
    ungated = bool(jr.ungated)
    run_stage(ctx, "after_timing", AfterTiming(again=False))
    if jr.ungated and not ungated:  # the audited call after timing found kernels the gate does not hold
        result = measure(jr, ctx, False)
        run_stage(ctx, "after_timing", AfterTiming(again=True))
    return result


def _bind_clock(jr: JudgeRun, gate: bool) -> None:
    """A fresh clock for both sides, calibrated on the reference's runner with this task's inputs and outputs."""
    jr.clock = make_clock(jr.device, jr.cfg.l2_flush_mb, gate=gate)
    for side in (jr.cand, jr.ref):
        jr.clock.bind(side.runner, jr.deadline())
    model = jr.timed_model
    _, spec, stage = jr.place_inputs(jr.ref, jr.inputs(jr.seed("calibration")), staged=True)
    slot_out = "out_" + model if model in jr.out_specs else None
    if slot_out is not None:
        jr.slot(jr.ref, slot_out, jr.out_specs[model][0])
    calibrate(jr.clock, jr.ref.runner, jr.deadline(), stage, slot_out)


def measure(jr: JudgeRun, ctx: Context, gate: bool) -> Timing:
    """At least `n_timing` rounds; then, up to `max_timing`, until both medians' relative standard errors are at most
    `timing_rel_se` or `timing_budget_s` is spent."""
    t0 = time.perf_counter()
    _bind_clock(jr, gate)
    ref_model = jr.timed_model
    for w in range(jr.cfg.warmup):  # through the clock (readings dropped): the gate learns its length
        values = jr.inputs(jr.seed("warmup", w))
        jr.call(jr.cand, "main", values, timed=True, retake=False)
        jr.call(jr.ref, ref_model, values, timed=True, retake=False)
    busy(jr, ref_model)
    _add_ms(jr, "timing_setup", t0)
    cand_samples, ref_samples = rounds(jr, ctx, ref_model)
    rt, bt = [s.ms for s in cand_samples], [s.ms for s in ref_samples]
    c_ms = jr.ref.runner.request("c_ms", deadline=jr.deadline(), stage="timing", model="main").get("c_ms") or []
    jr.signals.update(c_reference_signals(type("C", (), {"c_ms": c_ms})(), median(rt)))
    if jr.clock.misses:  # readings retaken because the gate ran out before the host had queued the call
        jr.signals["gate_retakes"] = jr.signals.get("gate_retakes", 0.0) + float(jr.clock.misses)
    if jr.clock.fixed:  # the measured fixed part taken off every reading (both sides), reported
        jr.signals["clock_fixed_ms"] = round(jr.clock.fixed, 5)
    floor = jr.clock.resolution
    at_floor = sum(ms <= floor for ms in rt + bt)
    if at_floor:  # readings within the hand-over's jitter, read as the clock's resolution (never as 0 ms)
        jr.signals["readings_at_resolution"] = float(at_floor)
    if os.environ.get("KERNEL_GYM_RUNNER_PROBE") and jr.device.type == "cuda":
        probe(jr, cand_samples, ref_samples)
    se = (median_rel_se(rt) ** 2 + median_rel_se(bt) ** 2) ** 0.5 if len(rt) >= 3 else 0.0
    gate_ms = median([s.gate_ms for s in cand_samples + ref_samples])
    return Timing(runtime_ms=median(rt), baseline_ms=median(bt), runtime_cv=cv(rt), baseline_cv=cv(bt),
                  trials=len(rt), method=jr.clock.method, speedup_rel_se=round(se, 6), gate_ms=round(gate_ms, 4),
                  resolution_ms=round(floor, 6))


def probe(jr: JudgeRun, cand_samples: list[Any], ref_samples: list[Any]) -> None:
    """Diagnostics for benchmarks/bench_judge.py (`KERNEL_GYM_RUNNER_PROBE=1`), never a verdict's input: beside the
    judge's readings, each runner's own event interval of the same timed rounds, the gate and the host lead."""
    for (side, samples), runner in zip((("cand", cand_samples), ("ref", ref_samples)), (jr.cand.runner, jr.ref.runner)):
        got = runner.request("probe", deadline=jr.deadline(), stage="timing")
        own = (got.get("probe") or [])[-len(samples):]
        marks = (got.get("marks") or [])[-len(samples):]
        for i, name in enumerate(("bind", "launch", "join_done", "deliver")):
            values = [m[i] for m in marks if len(m) > i]
            jr.signals[f"probe_{side}_host_{name}_ms"] = round(median(values), 4) if values else -1.0
        fixed = jr.clock.fixed
        jr.signals.update({f"probe_{side}_own_ms": round(median(own), 5) if own else -1.0,
                           f"probe_{side}_raw_ms": round(median([s.ms for s in samples]) + fixed, 5),
                           f"probe_{side}_lead_ms": round(median([s.lead_ms for s in samples]), 5),
                           f"probe_{side}_gate_ms": round(median([s.gate_ms for s in samples]), 5)})


def busy(jr: JudgeRun, model: str) -> None:
    """The reference back to back for WARMUP_S (a few ms on cpu), so clocks are up when the first round is timed."""
    _, spec, _ = jr.place_inputs(jr.ref, jr.inputs(jr.seed("busy")))
    jr.ref.runner.request("warm", deadline=jr.deadline(), stage="timing", model=model, inputs=spec, slot_in="in",
                          seconds=WARMUP_S if jr.device.type == "cuda" else 0.005)


def rounds(jr: JudgeRun, ctx: Context, ref_model: str) -> tuple[list[Any], list[Any]]:
    """Timed rounds. A round in which a side's reading still held host time after its retakes (`Sample.missed`:
    a machine too busy for even the longest gate) does not count: it could only make that side slower, and a slower
    reference is a larger speedup. Up to `n_min` such rounds are dropped (`signals["rounds_dropped"]`); past that
    the misses are the calls' own (a host path longer than the longest gate every time) and their rounds count."""
    cand_samples: list[Any] = []
    ref_samples: list[Any] = []
    dropped: list[tuple[Any, Any]] = []
    n_min, n_max = jr.cfg.n_timing, jr.cfg.max_timing
    deadline = time.perf_counter() + jr.cfg.timing_budget_s
    for r in range(n_max):
        kept, late = len(cand_samples), time.perf_counter() >= deadline
        if kept >= n_min and (late or settled(jr, cand_samples, ref_samples)):
            break
        if late and r >= n_min and kept:  # out of budget with some rounds kept, though fewer than n_min
            break
        t0 = time.perf_counter()
        values = jr.inputs(jr.seed("timed", r))
        t1 = _add_ms(jr, "timing_inputs", t0)
        order = (jr.cand, jr.ref) if r % 2 == 0 else (jr.ref, jr.cand)  # neither side always runs first
        calls = {}
        for side in order:
            jr.clock.flush()
            calls[side.name] = jr.call(side, "main" if side is jr.cand else ref_model, values, timed=True)
        t2 = _add_ms(jr, "timing_calls", t1)
        got, expected = calls["candidate"], calls["reference"]
        if (got.sample.missed or expected.sample.missed) and len(dropped) < n_min:  # (at most n_min: a host path
            dropped.append((got.sample, expected.sample))  # longer than the longest gate every call is the call's)
        else:
            cand_samples.append(got.sample)
            ref_samples.append(expected.sample)
        run_stage(ctx, "timed_call", TimedRound(r, ctx.judge_outputs(got, expected, f"timed call {r + 1}: ")))
        _add_ms(jr, "timing_checks", t2)
    if dropped:
        jr.signals["rounds_dropped"] = float(len(dropped))
        if not cand_samples:  # nothing else at all: the readings as they are (host time in them)
            cand_samples, ref_samples = [c for c, _ in dropped], [e for _, e in dropped]
    return cand_samples, ref_samples


def _add_ms(jr: JudgeRun, part: str, since: float) -> float:
    """Add the time since `since` to `stage_ms[part]` (the timing stage's parts: its setup, and per round the
    inputs, the two calls, the checks of their outputs; host time, a part's GPU work may land in a later one's wait);
    returns now."""
    now = time.perf_counter()
    jr.stage_ms[part] = round(jr.stage_ms.get(part, 0.0) + (now - since) * 1e3, 3)
    return now


def settled(jr: JudgeRun, cand_samples: list[Any], ref_samples: list[Any]) -> bool:
    target = jr.cfg.timing_rel_se
    return (median_rel_se([s.ms for s in cand_samples]) <= target
            and median_rel_se([s.ms for s in ref_samples]) <= target)
