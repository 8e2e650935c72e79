"""Timers used for both candidate and reference, so the two are always measured by the same method.

On cuda: a start event, the call, a *whole-device* synchronize, then the end event. Work hidden on a side
stream or in another thread's launches is inside the interval, and the host clock is read around the same
interval as a cross-check on the events. On cpu: the host clock only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

_perf_counter = time.perf_counter  # bound at import, before any candidate code runs


@dataclass(frozen=True)
class Sample:
    ms: float  # the timer's reading (events on cuda, host clock on cpu)
    host_ms: float  # host clock over the same interval


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


class CudaTimer:
    method = "cuda_events+device_sync"

    def __init__(self, device: torch.device, l2_flush_mb: int = 256):
        self.device = device
        self._flush = torch.empty(l2_flush_mb * (1 << 20) // 4, dtype=torch.int32, device=device)
        self._event = torch.cuda.Event

    def flush(self) -> None:
        """Overwrite a buffer larger than L2 so neither side runs from a cache the other warmed."""
        self._flush.zero_()
        torch.cuda.synchronize(self.device)

    def time(self, fn: Callable[[], Any]) -> tuple[Sample, Any]:
        start, end = self._event(enable_timing=True), self._event(enable_timing=True)
        torch.cuda.synchronize(self.device)
        t0 = _perf_counter()
        start.record()
        out = fn()
        torch.cuda.synchronize()  # every stream on every device: side-stream work is counted
        end.record()
        end.synchronize()
        t1 = _perf_counter()
        return Sample(start.elapsed_time(end), (t1 - t0) * 1e3), out


def make_timer(device: torch.device, l2_flush_mb: int = 256) -> WallTimer | CudaTimer:
    return CudaTimer(device, l2_flush_mb) if device.type == "cuda" else WallTimer(device)


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def cv(xs: list[float]) -> float:
    """Coefficient of variation (stdev / mean), 0 for fewer than two samples."""
    if len(xs) < 2:
        return 0.0
    m = statistics.fmean(xs)
    return statistics.stdev(xs) / m if m > 0 else 0.0


def timer_disagrees(samples: list[Sample], slack_ms: float = 0.05) -> bool:
    """True when the timer reads far less than the host clock over the same intervals.

    Both are taken around the same device-synchronized interval, so they agree to within launch slack
    unless the timer (or what it reads) was tampered with.
    """
    if not samples:
        return False
    t = median([s.ms for s in samples])
    h = median([s.host_ms for s in samples])
    return t < 0.5 * h - slack_ms


def c_reference_signals(ref_model: Any, runtime_ms: float) -> dict[str, float]:
    """A C task's reference (`kernel_gym.tasks.c_reference.CModel`) records the time of each C call (single CPU
    thread, no copies) in `c_ms`: its median, and the candidate's speedup over it. {} for other references."""
    c_ms = [float(x) for x in (getattr(ref_model, "c_ms", None) or [])]
    if not c_ms or runtime_ms <= 0:
        return {}
    c = median(c_ms)
    return {"c_reference_ms": float(f"{c:.5g}"), "speedup_vs_c": float(f"{c / runtime_ms:.5g}")}


def _lock_paths(device: torch.device) -> tuple[Path, Path] | None:
    if device.type != "cuda" or os.environ.get("KERNEL_GYM_TIMING_LOCK", "1") == "0":
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    uuid = str(getattr(torch.cuda.get_device_properties(index), "uuid", index))
    root = Path(os.environ.get("KERNEL_GYM_CACHE", Path.home() / ".cache" / "kernel_gym")) / "locks"
    root.mkdir(parents=True, exist_ok=True)
    return root / f"gpu-{uuid}.lock", root / f"gpu-{uuid}.gate"


@dataclass
class LockWait:
    seconds: float = 0.0  # time spent waiting for the lock
    acquired: bool = True  # False: the wait hit LOCK_TIMEOUT_S and the stage ran without the lock


LOCK_TIMEOUT_S = float(os.environ.get("KERNEL_GYM_LOCK_TIMEOUT_S", "30"))
"""Longest wait for the GPU lock. A job stuck holding it (a hung kernel, until its own run timeout kills it) must
not make other jobs time out: past this wait a stage runs without the lock, and says so."""


def _acquire(handle: Any, mode: int, deadline: float) -> bool:
    while True:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if _perf_counter() >= deadline:
                return False
            time.sleep(0.002)


@contextlib.contextmanager
def device_lock(device: torch.device, *, exclusive: bool, timeout_s: float | None = None):
    """The GPU's machine-wide lock: timing holds it exclusively, other GPU work (first calls, correctness trials,
    profiling) shared. So concurrent jobs on one GPU (pool workers, Ray actors, services sharing a host) run their
    checks side by side, but nothing else runs on the GPU while one of them is being timed.

    `fcntl` locks on `$KERNEL_GYM_CACHE/locks/gpu-<uuid>.lock` (keyed by the GPU's UUID, whatever
    CUDA_VISIBLE_DEVICES says); the kernel releases them if the holder dies. A turnstile (`.gate`) gives a waiting
    timer priority: new shared holders queue behind it, so timing is never starved. A wait is bounded by
    `LOCK_TIMEOUT_S` (KERNEL_GYM_LOCK_TIMEOUT_S, 30 s). KERNEL_GYM_TIMING_LOCK=0 turns the lock off. Yields a
    `LockWait`. A no-op on cpu (wall-clock timing there is informational)."""
    paths = _lock_paths(device)
    if paths is None:
        yield LockWait()
        return
    deadline = _perf_counter() + (LOCK_TIMEOUT_S if timeout_s is None else timeout_s)
    with open(paths[0], "a") as main, open(paths[1], "a") as gate:
        t0 = _perf_counter()
        acquired = False
        if _acquire(gate, fcntl.LOCK_EX, deadline):
            if exclusive:
                try:
                    acquired = _acquire(main, fcntl.LOCK_EX, deadline)
                finally:
                    fcntl.flock(gate, fcntl.LOCK_UN)
            else:
                fcntl.flock(gate, fcntl.LOCK_UN)
                acquired = _acquire(main, fcntl.LOCK_SH, deadline)
        try:
            yield LockWait(_perf_counter() - t0, acquired)
        finally:
            if acquired:
                fcntl.flock(main, fcntl.LOCK_UN)
