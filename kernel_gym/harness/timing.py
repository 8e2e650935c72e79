"""Timers used for both candidate and reference, so the two are always measured by the same method.

On cuda: a start event, the call, a *whole-device* synchronize, then the end event. Work hidden on a side
stream or in another thread's launches is inside the interval (the host clock is read around the same interval
too: `Sample.host_ms`). With the launch gate (the default), a short GPU-side wait is queued
before the start event, so the call's launches are queued while the GPU waits and the interval holds the GPU work,
not the host's launch latency (which differs from host to host); torch's pooled side streams are made to wait for
the gate too, and streams created blocking wait for it by CUDA's legacy default-stream rule. On cpu: the host
clock only.
"""

from __future__ import annotations

import collections
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

_perf_counter = time.perf_counter  # bound at import, before any candidate code runs
# The event and stream methods the timer calls, bound at import too: a solution that replaces them on the class or
# on the instances (a patched `Event.__new__`) does not reach the harness's readings.
_EVENT = torch.cuda.Event
_RECORD = torch.cuda.Event.record
_ELAPSED = torch.cuda.Event.elapsed_time
_EVENT_SYNC = torch.cuda.Event.synchronize
_EVENT_WAIT = torch.cuda.Event.wait
_SYNC = torch.cuda.synchronize
_SLEEP = torch.cuda._sleep

GATE_MIN_MS, GATE_MAX_MS = 0.1, 2.0


@dataclass(frozen=True)
class Sample:
    ms: float  # the timer's reading (events on cuda, host clock on cpu)
    host_ms: float  # host clock over the same interval (less the gate's nominal length when gated)
    gate_ms: float = 0.0  # the launch gate queued before the start event (0: none)
    lead_ms: float = 0.0  # host time from queuing the gate to the call's return (what the gate must cover)
    missed: bool = False  # the gate ran out before the host had queued everything: host time may be in `ms`


class WallTimer:
    method = "wall_clock"

    def __init__(self, device: torch.device):
        self.device = device

    def flush(self) -> None:
        """CPU caches are not flushed: inputs are fresh per call, which is what matters here."""

    def time(self, fn: Callable[[], Any]) -> tuple[Sample, Any]:
        t0 = _perf_counter()
        out = fn()
        t1 = _perf_counter()
        ms = (t1 - t0) * 1e3
        return Sample(ms, ms), out


_POOLED: dict[int, list[torch.cuda.Stream]] = {}


def pooled_streams(device: torch.device) -> list[torch.cuda.Stream]:
    """Every stream of torch's per-device stream pools (each priority): what `torch.cuda.Stream()` hands out.
    The pools are fixed for the life of the process, so they are enumerated once per device (by the worker's first
    job, before any candidate code runs)."""
    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    if index not in _POOLED:
        least, greatest = torch.cuda.Stream.priority_range()
        found: dict[int, torch.cuda.Stream] = {}
        for priority in range(min(least, greatest), max(least, greatest) + 1):
            for _ in range(64):  # a pool holds 32 streams, handed out round robin
                s = torch.cuda.Stream(device=index, priority=priority)
                found.setdefault(s.cuda_stream, s)
        _POOLED[index] = list(found.values())
    return _POOLED[index]


_MADE: dict[int, torch.cuda.Stream] = {}  # streams torch.cuda.Stream() handed out since track_streams()
_TRACKING = False
_HOLD: list[torch.cuda.Event | None] = [None]  # during a gated call: what a stream made now must wait for


def hold_new_streams(event: torch.cuda.Event | None) -> None:
    """During a gated timed call, a stream the solution makes (`torch.cuda.Stream()` in forward) waits for `event`
    (recorded behind the call's "go") as it is made, as the streams made earlier do; None: no longer."""
    _HOLD[0] = event


# Keywords of a Stream object made for a stream that already exists: torch.cuda.current_stream()/default_stream()
# build one with stream_id on every call, ExternalStream with stream_ptr. Tracking those would list the legacy stream
# twice (the profiler's stream check then skips: one marker per distinct stream is its premise) and would make a
# foreign stream look like one the gate holds.
WRAPS = frozenset({"stream_id", "stream_ptr"})


def track_streams() -> None:
    """Remember every stream `torch.cuda.Stream()` hands out from now on (a runner calls this before any candidate
    code runs): the launch gate then holds, and the runner joins, the streams a solution made — usually none — not
    all of torch's pools (128 streams: ~0.3 ms of host time a call). Streams wrapped from elsewhere
    (`ExternalStream`) are not pooled and not tracked: the profiler check sees their kernels."""
    global _TRACKING
    if _TRACKING:
        return
    cls = torch.cuda.Stream
    original = cls.__new__

    def __new__(klass, device=None, priority=0, **kwargs):  # noqa: ANN001, ANN202 - torch's signature
        stream = original(klass, device=device, priority=priority, **kwargs)
        if not WRAPS.intersection(kwargs) and stream.cuda_stream != 0:  # a stream handed out, not a wrapper
            _MADE.setdefault(stream.cuda_stream, stream)
            if _HOLD[0] is not None:
                stream.wait_event(_HOLD[0])
        return stream

    cls.__new__ = __new__  # type: ignore[method-assign]
    _TRACKING = True


def gated_streams(device: torch.device) -> list[torch.cuda.Stream]:
    """The streams a launch gate on `device` holds: the legacy default stream (the timing stream; blocking streams
    wait for it by rule) and the pooled streams a solution made (all of torch's pools where `track_streams` was not
    called). Empty when the current stream is not the legacy one (no gate)."""
    current = torch.cuda.current_stream(device)
    if current.cuda_stream != 0:
        return []
    if not _TRACKING:
        return [current, *pooled_streams(device)]
    index = current.device_index
    return [current, *(s for s in _MADE.values() if s.device_index == index and s.cuda_stream != current.cuda_stream)]


def sleep_cycles_per_ms(device: torch.device) -> float:
    """GPU clock cycles per ms of `torch.cuda._sleep` (the second of two readings: clocks up); sizes launch gates."""
    rate = 0.0
    for _ in range(2):
        a, b = _EVENT(enable_timing=True), _EVENT(enable_timing=True)
        _SYNC(device)
        _RECORD(a)
        _SLEEP(1_000_000)
        _RECORD(b)
        _EVENT_SYNC(b)
        rate = 1_000_000 / max(_ELAPSED(a, b), 1e-3)
    return rate


class CudaTimer:
    def __init__(self, device: torch.device, l2_flush_mb: int = 256, gate: bool = True):
        self.device = device
        self._flush = torch.empty(l2_flush_mb * (1 << 20) // 4, dtype=torch.int32, device=device)
        # the gate needs the timing stream to be the legacy default stream (blocking streams then wait for it)
        streams = gated_streams(device) if gate else []
        self.gated = bool(streams)
        self.method = "cuda_events+gate+device_sync" if self.gated else "cuda_events+device_sync"
        self._streams = streams[1:]  # the pooled ones: they wait for the gate event
        self._cycles_per_ms = sleep_cycles_per_ms(device) if self.gated else 0.0
        self._leads: collections.deque[float] = collections.deque(maxlen=8)
        self.gate_ms = 0.3 if self.gated else 0.0

    def flush(self) -> None:
        """Overwrite a buffer larger than L2 so neither side runs from a cache the other warmed."""
        self._flush.zero_()
        _SYNC(self.device)

    def time(self, fn: Callable[[], Any]) -> tuple[Sample, Any]:
        start, end = _EVENT(enable_timing=True), _EVENT(enable_timing=True)
        gate_ms = self.gate_ms
        _SYNC(self.device)
        t0 = _perf_counter()
        if gate_ms:
            _SLEEP(int(gate_ms * self._cycles_per_ms))
            gate = _EVENT()
            _RECORD(gate)
            for s in self._streams:  # torch's side streams queue behind the gate as well
                _EVENT_WAIT(gate, s)
        _RECORD(start)
        out = fn()
        lead = (_perf_counter() - t0) * 1e3
        _SYNC()  # every stream on every device: side-stream work is counted
        _RECORD(end)
        _EVENT_SYNC(end)
        t1 = _perf_counter()
        if gate_ms:  # the next gate covers the recent leads of both sides with room to spare
            self._leads.append(lead)
            self.gate_ms = min(GATE_MAX_MS, max(GATE_MIN_MS, 1.5 * max(self._leads) + 0.05))
        host = (t1 - t0) * 1e3 - gate_ms
        return Sample(_ELAPSED(start, end), max(host, 0.0), gate_ms, lead), out


def make_timer(device: torch.device, l2_flush_mb: int = 256, gate: bool = True) -> WallTimer | CudaTimer:
    return CudaTimer(device, l2_flush_mb, gate) if device.type == "cuda" else WallTimer(device)


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def cv(xs: list[float]) -> float:
    """Coefficient of variation (stdev / mean), 0 for fewer than two samples."""
    if len(xs) < 2:
        return 0.0
    m = statistics.fmean(xs)
    return statistics.stdev(xs) / m if m > 0 else 0.0


def median_rel_se(xs: list[float]) -> float:
    """Estimated relative standard error of the median of `xs`: 1.2533 * sigma / sqrt(n) / median, with sigma
    taken robustly as 1.4826 * MAD (so a few launch hiccups do not inflate it). inf for fewer than 3 samples."""
    if len(xs) < 3:
        return float("inf")
    m = statistics.median(xs)
    if m <= 0:
        return float("inf")
    mad = statistics.median([abs(x - m) for x in xs])
    return 1.2533 * 1.4826 * mad / (len(xs) ** 0.5) / m


def c_reference_signals(ref_model: Any, runtime_ms: float) -> dict[str, float]:
    """A C task's reference (`kernel_gym.tasks.c_reference.CModel`) records the time of each C call (single CPU
    thread, no copies) in `c_ms`: its median, and the candidate's speedup over it. {} for other references."""
    c_ms = [float(x) for x in (getattr(ref_model, "c_ms", None) or [])]
    if not c_ms or runtime_ms <= 0:
        return {}
    c = median(c_ms)
    return {"c_reference_ms": float(f"{c:.5g}"), "speedup_vs_c": float(f"{c / runtime_ms:.5g}")}
