"""The judge's clock: it times a runner's call from the judge's own process, the same way for candidate and
reference, so nothing a candidate can touch reads or writes a time.

What one timed call holds, in order: the judge's start; the judge writing the call's inputs into the runner's
shared buffers (before that they hold the previous call's: no work can start early, on any stream or thread); the
runner's work; its copy of the outputs into the judge's buffers; the end, after which the judge reads them (a
"done" before the copy reads as unwritten outputs). The fixed part (the cross-process hand-over, the two copies)
is measured by calls that do no work, on the reference's runner only (never on the candidate's, which could
slow them down to enlarge what is subtracted), and subtracted from both sides' readings. The spread of those calls
is the clock's resolution: a reading is never below it (work shorter than the hand-over's own jitter cannot be told
from that jitter), so no side ever reads 0 ms and no speedup or standard error is infinite.

- cpu: the judge's host clock around staging, request and reply.
- cuda: the judge's own timing events, ordered against the runner's work with interprocess events. The judge
  queues its launch gate (a short GPU-side sleep, sized to cover the runner's host-side launches), its start event,
  the inputs' copy, an L2 flush (inputs come from memory, as with do_bench) and "go"; the runner's streams wait for
  "go", run the call, copy the outputs and write the call's nonce (new each call, sent with the request) into the
  judge's flag (harness/stream_values.py); once the runner answers, a judge stream waits for the nonce and
  records the end event. A runner whose work never ends is killed and the judge writes the nonce itself: the end
  completes and the judge's context goes on (a wait on a dead runner's interprocess event is never released and
  hangs the judge's whole context: measured, benchmarks/probe_stuck_wait.py). Where the driver takes no stream
  memory operations the runner records "done" instead (`cudaStreamWaitEvent` waits for the latest record issued
  before the wait call: "go" is recorded before the request is sent, and "done" waited for only after the reply).
  Interprocess events cannot time, so the timing events never leave the judge.
"""

from __future__ import annotations

import collections
import secrets
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from kernel_gym.errors import SandboxError
from kernel_gym.harness import stream_values
from kernel_gym.harness.timing import GATE_MIN_MS, Sample, sleep_cycles_per_ms

_perf_counter = time.perf_counter
# The gate must outlast the runner's host path from the request to its last launch (a request and a reply cross
# the channel too): longer than the in-process timer's.
GATE_MAX_MS = 5.0
CALIBRATION_CALLS = 16  # calls per clock that measure its fixed part (stable to ~1 µs on H100/H200)
GATE_RETAKES = 4  # a reading whose gate ran out early is taken again, at most this many times
RESOLUTION_MIN_MS = 1e-3  # the finest resolution a clock claims: 1 µs (CUDA events resolve ~0.5 µs)


class ContextStuck(SandboxError):
    """The judge's own GPU work waits for something that will never happen: its GPU context is unusable."""


RELEASE_S = 1.0  # how long a stuck end may take to come in once its runner is killed


def _finished(event: torch.cuda.Event, deadline: float) -> bool:
    """Poll `event` until it has completed (True) or `deadline` (time.monotonic()) has passed (False)."""
    pause = 20e-6
    while not event.query():
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 1e-3)
    return True


class _Clock:
    """What both clocks share: the fixed part subtracted from every reading and the resolution it is floored at."""

    fixed = 0.0  # ms subtracted from every reading (the calibration's median)
    resolution = RESOLUTION_MIN_MS  # ms: no reading is below this (the calibration's robust spread)

    def reading(self, ms: float) -> float:
        return max(ms - self.fixed, self.resolution)


class WallClock(_Clock):
    method = "judge_wall_clock"
    gated = False

    def __init__(self, device: torch.device):
        self.device = device
        self.misses = 0

    def bind(self, runner: Any, deadline: float) -> None:
        """Nothing to share on cpu."""

    def flush(self) -> None:
        """CPU caches are not flushed: inputs are fresh per call."""

    def time(self, runner: Any, fields: dict[str, Any], deadline: float, op: str = "call",
             stage: Callable[[], None] | None = None) -> tuple[Sample, dict]:
        t0 = _perf_counter()
        if stage is not None:
            stage()
        reply = runner.request(op, deadline=deadline, timed=True, **fields)
        ms = (_perf_counter() - t0) * 1e3
        return Sample(self.reading(ms), ms), reply

    def timed(self, take: Callable[[], tuple[Sample, dict]]) -> tuple[Sample, dict]:
        return take()  # no gate to miss


class CudaClock(_Clock):
    def __init__(self, device: torch.device, l2_flush_mb: int = 256, gate: bool = True):
        self.device = device
        self._flush = torch.empty(l2_flush_mb * (1 << 20) // 4, dtype=torch.int32, device=device)
        self.gated = gate
        self.method = "judge_cuda_events+gate" if gate else "judge_cuda_events+device_sync"
        self._cycles_per_ms = sleep_cycles_per_ms(device) if gate else 0.0
        self._leads: collections.deque[float] = collections.deque(maxlen=8)
        self.gate_ms = 0.5 if gate else 0.0
        self._events: dict[int, tuple[torch.cuda.Event, ...]] = {}
        self.misses = 0  # readings retaken because the gate ran out before everything was queued
        self._ends = torch.cuda.Stream(device)  # where the end of a timed call waits for the runner's "done"
        # where the judge writes a killed runner's nonce itself (of the other priority's pool of streams: never the
        # same CUDA stream as any clock's `_ends`, behind whose wait the write would never run)
        self._release = torch.cuda.Stream(device, priority=-1)

    def _stuck(self, runner: Any, end: torch.cuda.Event, nonce: int | None, flag: int = 0) -> None:
        """The call's work did not end by its deadline: the runner is killed and the call is a timeout. The end
        waits for the nonce in the judge's own flag, so the judge releases it by writing the nonce itself (measured
        on an H100, benchmarks/probe_wait_value.py: the end completes at once and the context stays usable). Where
        the end waits for the runner's "done" event instead (a driver without stream memory operations) nothing
        releases it once the runner's context is gone (benchmarks/probe_stuck_wait.py: the judge's whole GPU context
        hangs on it): unless the end came in after all, the context is lost (`ContextStuck`: this job's verdict is
        a timeout, and the shared judge exits for a fresh one)."""
        from kernel_gym.judge.runners import RunnerFailure

        runner.kill()  # (its flag's memory stays with the runner's object, and `flag` was read before)
        if nonce is not None:
            stream_values.write(self._release.cuda_stream, flag, nonce)
        if not _finished(end, time.monotonic() + RELEASE_S):
            raise ContextStuck("a timed call's work never ended, and the judge's stream waiting for it cannot be "
                               "released: the judge's GPU context is lost")
        raise RunnerFailure("timeout", "call")

    def bind(self, runner: Any, deadline: float) -> None:
        """The runner's interprocess events (opened by it when it started)."""
        runner.wait_ready()
        if runner.events is None:
            raise RuntimeError("a cuda runner without its interprocess events")
        self._events[id(runner)] = runner.events

    def flush(self) -> None:
        """Overwrite a buffer larger than L2 (shared by every context on the GPU) so no side runs from a warm cache."""
        self._flush.zero_()
        torch.cuda.synchronize(self.device)

    def time(self, runner: Any, fields: dict[str, Any], deadline: float, op: str = "call",
             stage: Callable[[], None] | None = None) -> tuple[Sample, dict]:
        go, done = self._events[id(runner)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        gate_ms = self.gate_ms
        torch.cuda.synchronize(self.device)
        t0 = _perf_counter()
        if gate_ms:
            torch.cuda._sleep(int(gate_ms * self._cycles_per_ms))
        start.record()
        if stage is not None:
            stage()
            self._flush.zero_()
        go.record()
        if not gate_ms:  # no gate to hold streams that do not wait for "go": the inputs are in place before the request
            go.synchronize()
        nonce = secrets.randbits(62) + 1 if getattr(runner, "flag", None) is not None else None  # never 0, the flag's first value
        reply = runner.request(op, deadline=deadline, timed=True, gate=bool(gate_ms), nonce=nonce, **fields)
        # The end waits, on a stream of its own (non-blocking: nothing else of the judge's waits behind it), for the
        # nonce in the judge's flag (the runner writes it after its work and its outputs' copy), else for "done".
        # The nonce is new each call: nothing queued before the request can end its interval.
        flag = 0
        if nonce is not None:
            flag = runner.flag.tensors[0].data_ptr()
            stream_values.wait(self._ends.cuda_stream, flag, nonce)
        else:
            self._ends.wait_event(done)
        end.record(self._ends)
        lead = (_perf_counter() - t0) * 1e3
        # Valid only if the GPU is still in the gate now that both sides have queued everything, the end included:
        # then no host time (the judge's own, a busy machine's, the runner's) is inside the interval. Otherwise the
        # caller retakes it.
        missed = bool(gate_ms) and start.query()
        # The judge polls the end until the call's deadline: a runner whose kernel never ends never holds the judge
        # (a device-wide synchronize would wait for it forever, and every job with it).
        if not _finished(end, max(deadline, time.monotonic() + 0.5)):  # (a compile segment moved the request's)
            self._stuck(runner, end, nonce, flag)
        t1 = _perf_counter()
        if gate_ms:  # the next gate covers the recent leads of both sides with room to spare
            self._leads.append(lead)
            self.gate_ms = min(GATE_MAX_MS, max(GATE_MIN_MS, 1.5 * max(self._leads) + 0.05))
        host = max((t1 - t0) * 1e3 - gate_ms, 0.0)
        return Sample(self.reading(start.elapsed_time(end)), host, gate_ms, lead, missed), reply

    def timed(self, take: Callable[[], tuple[Sample, dict]]) -> tuple[Sample, dict]:
        """`take()` (one timed call, from staging on) until its reading is valid, at most GATE_RETAKES more times
        (the gate grows with each miss, up to GATE_MAX_MS: a miss at the longest gate is not taken again, a host
        path that long is the call's own); counts the misses. The last reading stands, `missed` if it still is."""
        for _ in range(GATE_RETAKES + 1):
            sample, reply = take()
            if not sample.missed:
                break
            self.misses += 1
            if sample.gate_ms >= GATE_MAX_MS:
                break
        return sample, reply


def calibrate(clock: WallClock | CudaClock, runner: Any, deadline: float, stage: Callable[[], None],
              slot_out: str | None, n: int = CALIBRATION_CALLS) -> list[float]:
    """The clock's fixed part, measured on `runner` (the reference's: the judge's own program) by `n` calls that
    do no work but everything else a timed call does (staged inputs, flush, hand-over, the outputs' copy); its
    median (less the first quarter: the gate learning its length) is subtracted from every later reading, and their
    robust spread (1.4826 × MAD, at least RESOLUTION_MIN_MS) is the clock's resolution: the floor of every reading."""
    clock.fixed, clock.resolution = 0.0, 0.0
    readings = noop_readings(clock, runner, n, deadline, stage, slot_out)
    settled = readings[n // 4:]
    clock.fixed = statistics.median(settled)
    clock.resolution = max(RESOLUTION_MIN_MS, 1.4826 * statistics.median([abs(r - clock.fixed) for r in settled]))
    return readings


def noop_readings(clock: WallClock | CudaClock, runner: Any, n: int, deadline: float,
                  stage: Callable[[], None] | None = None, slot_out: str | None = None) -> list[float]:
    """The clock's readings (ms) of `n` calls of the runner's `noop` (no model; with `stage` and `slot_out`, the
    inputs' and outputs' copies a real call has). A reading that still held host time after its retakes is replaced
    by another call (at most n more); only if fewer than half are clean are those readings used too."""
    fields = {"stage": "timing", "slot_out": slot_out}
    clean: list[float] = []
    held: list[float] = []
    for _ in range(2 * n):
        sample = clock.timed(lambda: clock.time(runner, fields, deadline, op="noop", stage=stage))[0]
        (held if sample.missed else clean).append(sample.ms)
        if len(clean) == n:
            break
    return clean if len(clean) >= n // 2 else clean + held


def fixed_cost(clock: WallClock | CudaClock, runner: Any, n: int = 200) -> dict[str, float]:
    """The clock's reading of a call that does nothing (no inputs, no outputs): the cross-process hand-over both
    sides carry. Median and 10th/90th percentiles in ms, over `n` calls."""
    import time as _time

    saved, clock.fixed, clock.resolution = (clock.fixed, clock.resolution), 0.0, 0.0
    try:
        readings = noop_readings(clock, runner, n, _time.monotonic() + 30)
    finally:
        clock.fixed, clock.resolution = saved
    q = statistics.quantiles(readings, n=10)
    return {"median_ms": statistics.median(readings), "p10_ms": q[0], "p90_ms": q[-1], "n": float(n)}


def make_clock(device: torch.device, l2_flush_mb: int = 256, gate: bool = True) -> WallClock | CudaClock:
    return CudaClock(device, l2_flush_mb, gate) if device.type == "cuda" else WallClock(device)
