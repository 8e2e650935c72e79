"""The judge's clock: it times a runner's call from the judge's own process, the same way for candidate and
reference, so nothing a candidate can touch reads or writes a time.

- cpu: the judge's host clock around request and reply (both sides carry the same channel round trip).
- cuda: the judge's own timing events, ordered against the runner's work with interprocess events. The judge
  queues its launch gate (a short GPU-side sleep, sized to cover the runner's host-side launches), its start event
  and "go"; the runner's streams wait for "go", run the call, copy the outputs into the judge's buffers and record
  "done"; once the runner says it recorded "done", the judge's stream waits for it and records the end event.
  (`cudaStreamWaitEvent` waits for the latest record issued before the wait call: "go" is recorded before the
  request is sent, and "done" waited for only after the reply.) Interprocess events cannot time, so the timing
  events never leave the judge.
"""

from __future__ import annotations

import collections
import statistics
import time
from typing import Any

import torch

from kernel_gym.eval.timing import GATE_MAX_MS, GATE_MIN_MS, Sample, sleep_cycles_per_ms

_perf_counter = time.perf_counter
CALIBRATION_CALLS = 24  # no-op calls per runner and clock that measure the fixed cross-process cost


class WallClock:
    method = "judge_wall_clock"
    gated = False

    def __init__(self, device: torch.device):
        self.device = device

    def fixed_ms(self, runner: Any) -> float:
        return 0.0

    def bind(self, runner: Any, deadline: float) -> None:
        """Nothing to share on cpu."""

    def flush(self) -> None:
        """CPU caches are not flushed: inputs are fresh per call."""

    def time(self, runner: Any, fields: dict[str, Any], deadline: float, op: str = "call") -> tuple[Sample, dict]:
        t0 = _perf_counter()
        reply = runner.request(op, deadline=deadline, timed=True, **fields)
        ms = (_perf_counter() - t0) * 1e3
        return Sample(ms, ms), reply


class CudaClock:
    def __init__(self, device: torch.device, l2_flush_mb: int = 256, gate: bool = True):
        self.device = device
        self._flush = torch.empty(l2_flush_mb * (1 << 20) // 4, dtype=torch.int32, device=device)
        self.gated = gate
        self.method = "judge_cuda_events+gate" if gate else "judge_cuda_events+device_sync"
        self._cycles_per_ms = sleep_cycles_per_ms(device) if gate else 0.0
        self._leads: collections.deque[float] = collections.deque(maxlen=8)
        self.gate_ms = 0.5 if gate else 0.0
        self._events: dict[int, tuple[torch.cuda.Event, ...]] = {}
        self._fixed: dict[int, float] = {}  # runner -> the fixed cost subtracted from its readings (ms)

    def bind(self, runner: Any, deadline: float) -> None:
        """The runner's interprocess events (opened by it when it started), and the clock's fixed cost with it: the
        median reading of calls that do nothing (go -> done), which every reading then has subtracted."""
        runner.wait_ready()
        if runner.events is None:
            raise RuntimeError("a cuda runner without its interprocess events")
        self._events[id(runner)] = runner.events
        self._fixed[id(runner)] = 0.0
        readings = noop_readings(self, runner, CALIBRATION_CALLS, deadline)
        self._fixed[id(runner)] = statistics.median(readings[CALIBRATION_CALLS // 4:])  # (the first: gate learning)

    def fixed_ms(self, runner: Any) -> float:
        return self._fixed.get(id(runner), 0.0)

    def flush(self) -> None:
        """Overwrite a buffer larger than L2 (shared by every context on the GPU) so no side runs from a warm cache."""
        self._flush.zero_()
        torch.cuda.synchronize(self.device)

    def time(self, runner: Any, fields: dict[str, Any], deadline: float, op: str = "call") -> tuple[Sample, dict]:
        go, done, copied = self._events[id(runner)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        gate_ms = self.gate_ms
        torch.cuda.synchronize(self.device)
        t0 = _perf_counter()
        if gate_ms:
            torch.cuda._sleep(int(gate_ms * self._cycles_per_ms))
        start.record()
        go.record()
        reply = runner.request(op, deadline=deadline, timed=True, gate=bool(gate_ms), **fields)
        lead = (_perf_counter() - t0) * 1e3
        stream = torch.cuda.current_stream(self.device)
        stream.wait_event(done)
        end.record()
        stream.wait_event(copied)  # the caller's snapshot of the outputs comes after the runner's copy
        end.synchronize()
        t1 = _perf_counter()
        if gate_ms:  # the next gate covers the recent leads of both sides with room to spare
            self._leads.append(lead)
            self.gate_ms = min(GATE_MAX_MS, max(GATE_MIN_MS, 1.5 * max(self._leads) + 0.05))
        host = max((t1 - t0) * 1e3 - gate_ms, 0.0)
        return Sample(max(start.elapsed_time(end) - self._fixed.get(id(runner), 0.0), 0.0), host, gate_ms, lead), reply


def noop_readings(clock: WallClock | CudaClock, runner: Any, n: int, deadline: float) -> list[float]:
    """The clock's readings (ms) of `n` calibration calls (go -> one empty kernel -> done, no model, no copy)."""
    return [clock.time(runner, {"stage": "timing"}, deadline, op="noop")[0].ms for _ in range(n)]


def fixed_cost(clock: WallClock | CudaClock, runner: Any, n: int = 200) -> dict[str, float]:
    """The clock's reading of a call that does nothing (the runner waits for "go" and records "done" at once): the
    fixed cross-process cost both sides carry. Median and 10th/90th percentiles in ms, over `n` calls."""
    import time as _time

    fixed = getattr(clock, "_fixed", {})
    saved = fixed.pop(id(runner), None)  # the raw readings, not less the calibration
    try:
        readings = noop_readings(clock, runner, n, _time.monotonic() + 30)
    finally:
        if saved is not None:
            fixed[id(runner)] = saved
    q = statistics.quantiles(readings, n=10)
    return {"median_ms": statistics.median(readings), "p10_ms": q[0], "p90_ms": q[-1], "n": float(n)}


def make_clock(device: torch.device, l2_flush_mb: int = 256, gate: bool = True) -> WallClock | CudaClock:
    return CudaClock(device, l2_flush_mb, gate) if device.type == "cuda" else WallClock(device)
