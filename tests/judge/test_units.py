"""The judge's parts on their own: the channel, shared arenas, the registry of dynamic checks, seeds."""

from __future__ import annotations

import os
import socket

import pytest
import torch

from kernel_gym.sandbox.channel import Channel, ChannelTimeout
from kernel_gym.sandbox.shared import Arena, Attached, Spec


def test_channel_passes_messages_and_descriptors():
    a, b = socket.socketpair()
    left, right = Channel(a), Channel(b)
    r, w = os.pipe()
    left.send({"op": "bind", "nfds": 1}, [r])
    message = right.receive(deadline=None)
    assert message["op"] == "bind" and len(message["_fds"]) == 1
    os.write(w, b"x")
    assert os.read(message["_fds"][0], 1) == b"x"
    with pytest.raises(ChannelTimeout):
        right.receive(deadline=0)
    a.sendall(b"not json\n")
    with pytest.raises(ValueError, match="malformed"):
        right.receive(deadline=None)
    for fd in (r, w, message["_fds"][0]):
        os.close(fd)
    left.close()
    right.close()


def test_cpu_arena_is_shared_memory():
    specs = [Spec((4, 3), "float32"), Spec((5,), "int64"), Spec((), "float16")]
    arena = Arena(specs, torch.device("cpu"))
    descriptor, fds = arena.descriptor()
    attached = Attached(descriptor, [os.dup(fds[0])], torch.device("cpu"))
    arena.tensors[0].copy_(torch.arange(12.0).reshape(4, 3))
    assert torch.equal(attached.tensors[0], torch.arange(12.0).reshape(4, 3))
    attached.tensors[1].fill_(7)  # what the runner writes, the judge reads
    assert arena.tensors[1].tolist() == [7] * 5
    assert [tuple(t.shape) for t in attached.tensors] == [(4, 3), (5,), ()]
    assert all(t.data_ptr() % 256 == 0 for t in arena.tensors)
    attached.close()
    arena.close()


def test_the_judge_releases_torchs_ipc_count_of_every_share_it_retires(monkeypatch):
    """torch counts a cuda share until its consumer frees its views, and the consumer's release writes a counter
    file only the judge's uid may open: a runner under a uid of its own (or a dead one) never releases it, and torch
    then keeps the buffer for as long as the judge runs. The judge releases the count itself when it retires the
    arena, whether the runner ended its job or died (`test_a_killed_runners_buffers_go_back`, GPU: the memory)."""
    released = []
    monkeypatch.setattr(torch.UntypedStorage, "_release_ipc_counter",
                        lambda *args, device=None: released.append((args, device)), raising=False)
    arena = Arena([Spec((4,), "float32")], torch.device("cpu"))
    arena._counter = (b"/torch_1_2_3", 7)  # noqa: SLF001 - as Arena.descriptor sets it for a cuda share
    arena.retire()
    assert released == [((b"/torch_1_2_3", 7), torch.device("cpu"))] and arena.base is None
    arena.retire()  # (once only: a count is released once)
    assert len(released) == 1


def test_layout_is_validated():
    with pytest.raises(ValueError):
        Spec.from_json([[2, -1], "float32"])
    with pytest.raises(ValueError):
        Spec.from_json([[2], "no_such_dtype"])


def test_every_verdict_has_one_registered_check_per_stage_in_one_visible_order():
    """Every verdict is raised by a registered check in a file named by it (judge/dynamic/<verdict>.py), listed in
    ORDER at its stage; every check has its rule; a check cannot be registered twice or outside ORDER."""
    from kernel_gym.judge import dynamic

    assert {(stage, v) for stage, verdicts in dynamic.ORDER.items() for v in verdicts} == set(dynamic.REGISTRY)
    for (stage, verdict), check in dynamic.REGISTRY.items():
        assert check.rule, f"{verdict} at {stage}: its docstring is its rule"
        assert check.fn.__module__ == f"kernel_gym.judge.dynamic.{verdict}", check.fn.__module__
    assert all(dynamic.DYNAMIC_CHECKS.values())
    with pytest.raises(ValueError, match="twice"):
        dynamic.check("decoy_kernel", "correctness")(lambda ctx, seen: None)
    with pytest.raises(ValueError, match="ORDER"):
        dynamic.check("decoy_kernel", "timed_call")(lambda ctx, seen: None)
    with pytest.raises(ValueError, match="verdict"):
        dynamic.Hack("no_such_verdict", "")


def test_every_hack_verdict_is_raised_inside_a_registered_check():
    """No `raise Hack` (nor `Hack(` made to be raised) anywhere in kernel_gym outside judge/dynamic/<verdict>.py."""
    import ast
    from pathlib import Path

    import kernel_gym

    root = Path(kernel_gym.__file__).parent
    outside = []
    for path in root.rglob("*.py"):
        if path.parent.name == "dynamic" and path.parent.parent.name == "judge":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Hack":
                outside.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not outside, outside
    registry = root / "judge" / "dynamic" / "registry.py"
    for path in registry.parent.glob("*.py"):
        if path.stem in ("__init__", "registry", "context"):
            continue
        verdicts = {node.args[0].value for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Hack"
                    and isinstance(node.args[0], ast.Constant)}
        assert verdicts == {path.stem}, (path.name, verdicts)  # a check's file gives its own verdict only


def test_seed_streams_are_apart_and_salted():
    from kernel_gym.judge.seeds import STREAMS, seed_for

    used = {"trial": 10, "warmup": 10, "timed": 300, "reuse": 2}  # how many calls each stream serves at most
    seeds = [seed_for(0, 12345, s, i) for s in STREAMS for i in range(used.get(s, 1))]
    assert len(set(seeds)) == len(seeds)  # no two calls of a job share inputs
    assert seed_for(0, 0, "trial", 0) != seed_for(0, 1, "trial", 0)


def test_a_reading_whose_gate_ran_out_is_taken_again():
    """The judge's CUDA clock keeps a reading only if the GPU was still in the launch gate when the reply came (no
    host time in it); otherwise the call is taken again, at most GATE_RETAKES more times, and the misses counted."""
    from types import SimpleNamespace

    from kernel_gym.harness.timing import Sample
    from kernel_gym.judge.clock import GATE_MAX_MS, GATE_RETAKES, CudaClock

    def takes(missed: list[bool]):
        it = iter(missed)
        calls = []

        def take():
            calls.append(1)
            return Sample(1.0 + len(calls), 0.0, 1.0, 0.5, next(it)), {"n": len(calls)}
        return take, calls

    clock = SimpleNamespace(misses=0)
    take, calls = takes([True, True, False, True])
    sample, reply = CudaClock.timed(clock, take)
    assert (len(calls), clock.misses, reply["n"], sample.missed) == (3, 2, 3, False)

    clock = SimpleNamespace(misses=0)
    take, calls = takes([True] * (GATE_RETAKES + 5))
    sample, _ = CudaClock.timed(clock, take)  # a host that never keeps up: bounded, the last reading stands
    assert len(calls) == GATE_RETAKES + 1 and clock.misses == GATE_RETAKES + 1 and sample.missed

    clock = SimpleNamespace(misses=0)  # missed at the longest gate: the host path is the call's own, not retaken
    sample, _ = CudaClock.timed(clock, lambda: (Sample(1.0, 0.0, GATE_MAX_MS, 7.0, True), {}))
    assert clock.misses == 1 and sample.missed


def test_calibration_uses_clean_readings_only():
    """What is subtracted from both sides is measured on clean readings: one that still held host time after its
    retakes is replaced by another call; only a machine where fewer than half are clean gets the held ones used."""
    from kernel_gym.harness.timing import Sample
    from kernel_gym.judge.clock import noop_readings

    class Clock:
        def __init__(self, missed):
            self.missed = iter(missed)

        def time(self, *args, **kwargs):
            raise AssertionError("called through timed")

        def timed(self, take):
            missed = next(self.missed)
            return Sample(5.0 if missed else 1.0, 0.0, 1.0, 0.5, missed), {}

    readings = noop_readings(Clock([False, True, False, True, False, False]), None, 4, 0.0)
    assert readings == [1.0] * 4
    readings = noop_readings(Clock([True] * 7 + [False]), None, 4, 0.0)  # 1 clean of 8: the machine is what it is
    assert sorted(readings) == [1.0] + [5.0] * 7


def test_a_round_with_host_time_left_in_it_does_not_count():
    """A timed round whose reading still held host time after its retakes is dropped (it could only make that side
    slower, and a slower reference is a larger speedup); rounds go on until enough clean ones are in."""
    from types import SimpleNamespace

    from kernel_gym.harness.timing import Sample
    from kernel_gym.judge.measure import rounds

    missed = iter([False, False, True, False] + [False] * 40)  # the reference's reading of round 2 held host time

    def call(side, model, values, timed):
        m = next(missed)
        return SimpleNamespace(sample=Sample(9.0 if m else 1.0 + 0.01 * len(values), 0.0, 1.0, 0.5, m))

    jr = SimpleNamespace(cfg=SimpleNamespace(n_timing=3, max_timing=3 + 1, timing_budget_s=60.0, timing_rel_se=1.0),
                         inputs=lambda seed: [seed], seed=lambda *a: 0, cand=SimpleNamespace(name="candidate"),
                         ref=SimpleNamespace(name="reference"), clock=SimpleNamespace(flush=lambda: None), call=call,
                         signals={}, stage_ms={})
    ctx = SimpleNamespace(judge_outputs=lambda got, expected, where: None)
    cand, ref = rounds(jr, ctx, "main")
    assert {"timing_inputs", "timing_calls", "timing_checks"} <= set(jr.stage_ms)  # (the rounds' parts)
    assert len(cand) == len(ref) == 3 and all(s.ms < 2 for s in cand + ref)
    assert jr.signals["rounds_dropped"] == 1.0

    missed = iter([True] * 100)  # every reading held host time: n_min rounds dropped, then they count
    jr.signals = {}
    cand, ref = rounds(jr, ctx, "main")
    assert len(cand) == 1 and jr.signals["rounds_dropped"] == 3.0  # (max_timing 4: 3 dropped, the 4th counts)


def test_a_reading_within_the_hand_overs_jitter_is_the_clocks_resolution_never_zero():
    """On a loaded machine the calibration's no-op calls can take longer than a fast call does later: the reading
    less the fixed part would be 0 ms or below, and a 0 ms median made the speedup and its standard error infinite
    (a reward of inf; a service response that could not be encoded). A reading is floored at the clock's
    resolution, the calibration's robust spread, and everything built from it is finite."""
    import json
    import math
    import time as _time

    import torch

    from kernel_gym.eval.result import EvalResult, Outcome, Timing
    from kernel_gym.harness.timing import cv, median, median_rel_se
    from kernel_gym.judge.clock import RESOLUTION_MIN_MS, WallClock, calibrate

    class Runner:  # no-op calls slow (a busy machine during calibration), real calls fast
        def __init__(self):
            self.noop_s = iter([0.004, 0.006] * 16)

        def request(self, op, **fields):
            _time.sleep(next(self.noop_s) if op == "noop" else 0.0005)
            return {}

    clock, runner = WallClock(torch.device("cpu")), Runner()
    calibrate(clock, runner, _time.monotonic() + 30, lambda: None, None)
    assert 4.0 < clock.fixed < 7.0 and clock.resolution >= RESOLUTION_MIN_MS
    readings = [clock.time(runner, {}, 0.0)[0].ms for _ in range(5)]
    assert readings == [clock.resolution] * 5  # not 0: every call of both sides is at least the resolution
    rt = bt = readings
    se = (median_rel_se(rt) ** 2 + median_rel_se(bt) ** 2) ** 0.5
    timing = Timing(median(rt), median(bt), cv(rt), cv(bt), 5, clock.method, se, 0.0, clock.resolution)
    assert math.isfinite(timing.speedup) and math.isfinite(timing.speedup_rel_se) and timing.speedup == 1.0
    json.dumps(EvalResult(Outcome.CORRECT, timing=timing).to_dict(), allow_nan=False)


def test_a_result_is_strict_json_whatever_floats_it_holds():
    """EvalResult.to_dict() is what the service sends and the logs keep: a non-finite float anywhere in it (a
    signal, a mismatch's error) is written as null, so one odd value cannot make a whole batch's response fail."""
    import json

    from kernel_gym.eval.result import EvalResult, Mismatch, Outcome

    result = EvalResult(Outcome.MISMATCH, mismatch=Mismatch(float("inf"), float("nan"), "x", 1, 2),
                        signals={"a": float("-inf"), "b": 1.5})
    d = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert d["mismatch"]["max_abs_err"] is None and d["signals"] == {"a": None, "b": 1.5}
    assert EvalResult.from_dict(d).signals["b"] == 1.5


def test_a_job_the_judge_cannot_place_says_it_is_the_machines_failure():
    """Out of GPU memory after the judge's retries (the last with its pool to itself) means other processes hold
    the GPU: the crash message says so, so a trainer can tell it from the solution's own failure."""
    from kernel_gym.judge.server import judge_failure_message

    oom = judge_failure_message(RuntimeError("CUDA out of memory. Tried to allocate 1024.00 MiB.\nProcess 1 has ..."))
    assert "infrastructure failure, not the solution's" in oom and "Tried to allocate 1024.00 MiB." in oom
    assert "Process 1" not in oom  # the first line only
    assert judge_failure_message(KeyError("model")) == "the judge failed on this job: 'model'"


def test_an_allocation_larger_than_the_gpu_needs_no_oom_confirmation(monkeypatch):
    """An `oom` among other jobs is confirmed alone (the others may hold the memory), unless the failed allocation
    alone exceeds the whole card (the fault benchmark's 1 TiB ask: 12 s to its verdict, the pool drained for it)."""
    from types import SimpleNamespace

    from kernel_gym.judge.judge_memory import beyond_the_device

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: SimpleNamespace(total_memory=80 * 2**30))
    huge = "OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 GiB. GPU 0 has a total capacity of 79 GiB"
    fits = "OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 79 GiB"
    assert beyond_the_device(huge, "cuda") and not beyond_the_device(fits, "cuda")
    assert not beyond_the_device(huge, "cpu") and not beyond_the_device("killed", "cuda")


def test_the_stall_log_waits_for_the_calls_in_flight_and_counts_only_other_jobs(monkeypatch):
    """A timed-out job's window: from its start until the calls other jobs had in flight have ended (or SETTLE_S
    after its own end, whichever is later). Its own fault never counts; a fault after the window does not."""
    import threading
    import time

    from kernel_gym.judge import stalls

    monkeypatch.setattr(stalls, "SETTLE_S", 0.2)
    log = stalls.StallLog()
    t0 = time.monotonic()
    log.record(1, t0 + 0.05)  # the timed-out job's own fault
    assert log.beside(1, t0, t0 + 0.1) == 0
    earlier_run = stalls.StallLog()  # the same job's earlier run (a rerun has a token of its own): its own fault too
    earlier_run.record(0, t0 + 0.05)
    assert earlier_run.beside(1, t0, t0 + 0.1, own={0}) == 0 and earlier_run.beside(1, t0, t0 + 0.1) == 1
    running = {"deadline": time.monotonic() + 0.6}  # another job's call, still running, whose runner then faults

    def fault_later():
        time.sleep(0.4)
        log.record(2)
        running["deadline"] = None
    threading.Thread(target=fault_later).start()
    now = time.monotonic()
    assert log.beside(1, t0, now, in_flight=lambda: running["deadline"]) == 1
    later = stalls.StallLog()
    threading.Thread(target=lambda: (time.sleep(0.6), later.record(2))).start()
    now = time.monotonic()
    assert later.beside(1, now - 0.1, now) == 0  # (nothing in flight: the window closed at SETTLE_S)


def test_the_stall_window_begins_at_the_call_that_timed_out(monkeypatch):
    """A fault that ended before the timed-out call began (less SETTLE_S) cannot have stalled it: the window starts
    at that call, not at the job's start (at 20 % faults on an H100 the whole-job window made faults of ~10 s before
    cost "alone" reruns that drained the pool). Without the call's start the whole job's window stays."""
    import time

    from kernel_gym.judge import stalls

    monkeypatch.setattr(stalls, "SETTLE_S", 0.2)
    t0 = time.monotonic() - 10.0  # the job began 10 s ago; its last call 3 s ago
    earlier, during = stalls.StallLog(), stalls.StallLog()
    for log, other in ((earlier, t0 + 2.0), (during, t0 + 8.0)):
        log.record(2, other)  # another job's runner timed out or died then
        log.record(1, t0 + 9.9, call_start=t0 + 7.0)  # this job's call, begun at 7 s, timed out
    assert earlier.beside(1, t0, t0 + 9.9) == 0
    assert during.beside(1, t0, t0 + 9.9) == 1
    edge = stalls.StallLog()  # within SETTLE_S before the call's start: counted (a stall's end is recorded late)
    edge.record(2, t0 + 6.9)
    edge.record(1, t0 + 9.9, call_start=t0 + 7.0)
    assert edge.beside(1, t0, t0 + 9.9) == 1
    whole = stalls.StallLog()  # no call start recorded: the job's whole window
    whole.record(2, t0 + 2.0)
    whole.record(1, t0 + 9.9)
    assert whole.beside(1, t0, t0 + 9.9) == 1
    ran = stalls.StallLog()  # another job's timeout while the GPU ran other work (the stall probe): not counted
    ran.record(2, t0 + 8.0, call_start=t0 + 6.0, stalling=False)
    ran.record(1, t0 + 9.9, call_start=t0 + 7.0)
    assert ran.beside(1, t0, t0 + 9.9) == 0


@pytest.mark.parametrize("runs,verdict,alone_asked", [
    # (outcome, whether another fault was beside it) of each run; the job's verdict; which runs asked for the pool
    ([("timeout", True), ("correct", False)], "correct", [False, False]),  # stalled, then judged beside the others
    ([("timeout", True), ("timeout", False)], "timeout", [False, False]),  # its own hang: no fault beside the rerun
    ([("timeout", True), ("timeout", True), ("timeout", False)], "timeout", [False, False, True]),  # faults twice
    ([("timeout", True), ("timeout", True), ("correct", False)], "correct", [False, False, True]),
    ([("timeout", False)], "timeout", [False]),  # nothing beside it: a verdict at once
])
def test_a_timeout_beside_a_fault_is_rerun_beside_the_others_before_it_drains_the_pool(runs, verdict, alone_asked):
    """A timeout met beside another job's fault is confirmed first by a rerun beside the other jobs (the staller's
    runner is gone), and alone only when that rerun too met a fault: an "alone" run holds every new job until the
    running ones finish (at 20 % faults on an H100 two such drains held throughput at 0.64x). The job's earlier runs
    are its own, never another job's fault."""
    from kernel_gym.eval.result import EvalResult, Outcome
    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cpu", size=1)
    asked, owns, script = [], [], list(runs)

    def once(job, alone=False, cancel=None):
        asked.append(alone)
        outcome, _ = script[0]
        return EvalResult(outcome=Outcome(outcome), message=outcome), not alone, (len(asked), 0.0, 1.0)

    def beside(token, since, until, in_flight=None, own=()):
        owns.append(set(own))
        return int(script.pop(0)[1])
    try:
        pool._evaluate_once, pool._stalls.beside = once, beside
        result = pool.evaluate(None)
    finally:
        pool.close()
    assert result.outcome is Outcome(verdict) and not result.infra_failure, result
    assert asked == alone_asked
    assert result.stage_ms.get("timeout_reruns", 0) == len(runs) - 1
    assert owns[1:] == [set(range(1, i + 1)) for i in range(1, len(owns))]  # earlier runs' tokens are its own


def test_a_runner_that_cannot_attach_the_judges_buffers_fails_the_job_with_why():
    """A bind the runner answers with an error is the job's failure at once, with that error (it was ignored, and
    the runner's next call failed with KeyError: 'in')."""
    import time
    from types import SimpleNamespace

    import torch

    from kernel_gym.errors import SandboxError
    from kernel_gym.judge.run import JudgeRun
    from kernel_gym.judge.sides import Side

    class Refuses:
        def share(self, arena):
            pass

        def request(self, op, **fields):
            assert op == "bind"
            return {"error": {"outcome": "runtime_error", "message": "OSError: no CUDA IPC here", "poisoned": False}}

    jr = JudgeRun.__new__(JudgeRun)
    jr.device, jr.stage = torch.device("cpu"), "compile"
    jr.limits = SimpleNamespace(deadline=lambda stage: time.monotonic() + 5)
    ref = Side(Refuses(), "reference")
    jr.ref = ref
    with pytest.raises(SandboxError, match="could not attach the judge's buffers: OSError: no CUDA IPC here"):
        jr.slot(ref, "in", [])
    ref.close()
