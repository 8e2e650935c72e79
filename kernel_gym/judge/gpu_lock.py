"""The GPU's lock among the judge's jobs: timing holds it alone (exclusive), other GPU work shares it, first come,
first served within this process (`_Line`), machine-wide through a file lock per GPU (every judge process of the
machine, every client's jobs). A compile segment lets its share go (judge/budget.py)."""

from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernel_gym.paths import cache_dir

_perf_counter = time.perf_counter


def cpu_lock() -> bool:
    """KERNEL_GYM_CPU_LOCK=1 (tests): the cpu backend takes the GPU's lock protocol too (one lock for the machine's
    cpu), so the judge's exclusivity, compile segments and stopped runners are exercised without a GPU."""
    return os.environ.get("KERNEL_GYM_CPU_LOCK") == "1"


def _lock_paths(device: torch.device) -> tuple[Path, Path] | None:
    if os.environ.get("KERNEL_GYM_TIMING_LOCK", "1") == "0" or (device.type != "cuda" and not cpu_lock()):
        return None
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        uuid = str(getattr(torch.cuda.get_device_properties(index), "uuid", index))
    else:
        uuid = "cpu"
    root = cache_dir("locks")
    root.mkdir(parents=True, exist_ok=True)
    return root / f"gpu-{uuid}.lock", root / f"gpu-{uuid}.gate"


@dataclass
class LockWait:
    seconds: float = 0.0  # time spent waiting for the lock
    acquired: bool = True  # False: the wait hit LOCK_TIMEOUT_S and the stage ran without the lock


LOCK_TIMEOUT_S = float(os.environ.get("KERNEL_GYM_LOCK_TIMEOUT_S", "30"))
"""Longest wait for the GPU lock. A job stuck holding it (a hung kernel, until its own run timeout kills it) must
not make other jobs time out: past this wait a stage runs without the lock, and says so."""


class _Line:
    """First come, first served among one process's timers of one GPU (the machine's judge times every client's
    jobs): only the first in line goes for the machine-wide lock; a waiter that gives up leaves the line."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: collections.deque[object] = collections.deque()

    @contextlib.contextmanager
    def first(self, deadline: float) -> Iterator[bool]:
        """Wait to be first in line (until `deadline`); yields whether it was reached. Leaves the line on exit."""
        me = object()
        with self._cond:
            self._waiting.append(me)
            while self._waiting[0] is not me:
                remaining = deadline - _perf_counter()
                if remaining <= 0:
                    break
                self._cond.wait(min(remaining, 1.0))  # (an endless deadline is inf)
            reached = self._waiting[0] is me
        try:
            yield reached
        finally:
            with self._cond:
                self._waiting.remove(me)
                self._cond.notify_all()


_LINES: dict[Path, _Line] = {}
_LINES_LOCK = threading.Lock()


def _line(path: Path) -> _Line:
    with _LINES_LOCK:
        return _LINES.setdefault(path, _Line())


def _acquire(handle: Any, mode: int, deadline: float) -> bool:
    while True:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if _perf_counter() >= deadline:
                return False
            time.sleep(0.002)


def _take_shared(main: Any, gate: Any, deadline: float) -> bool:
    """A shared hold of `main`, taken behind the turnstile (`gate`: a waiting timer goes first) by `deadline`."""
    if not _acquire(gate, fcntl.LOCK_EX, deadline):
        return False
    fcntl.flock(gate, fcntl.LOCK_UN)
    return _acquire(main, fcntl.LOCK_SH, deadline)


class SharedHold:
    """A shared hold of the GPU's lock that its job lets go of and takes again: a job's compile segments (its runner
    compiling, holding no GPU) never make a timer wait (judge/budget.py). Same lock, turnstile and LOCK_TIMEOUT_S-free
    waits as `device_lock(exclusive=False, timeout_s=inf)`; a no-op on cpu."""

    def __init__(self, device: torch.device):
        self.paths = _lock_paths(device)
        self._main: Any = None

    @property
    def held(self) -> bool:
        return self._main is not None

    def take(self) -> float:
        """Take the share (waiting behind any timer, as long as it takes); returns the seconds waited."""
        if self.paths is None or self._main is not None:
            return 0.0
        t0 = _perf_counter()
        main = open(self.paths[0], "a")
        try:
            with open(self.paths[1], "a") as gate:
                _take_shared(main, gate, float("inf"))
        except BaseException:
            main.close()
            raise
        self._main = main
        return _perf_counter() - t0

    def let_go(self) -> None:
        if self._main is not None:
            main, self._main = self._main, None
            fcntl.flock(main, fcntl.LOCK_UN)
            main.close()


@contextlib.contextmanager
def device_lock(device: torch.device, *, exclusive: bool, timeout_s: float | None = None):
    """The GPU's machine-wide lock: timing holds it exclusively, other GPU work (first calls, correctness trials,
    profiling) shared. So concurrent jobs on one GPU (pool workers, Ray actors, services sharing a host) run their
    checks side by side, but nothing else runs on the GPU while one of them is being timed.

    `fcntl` locks on `$KERNEL_GYM_CACHE/locks/gpu-<uuid>.lock` (keyed by the GPU's UUID, whatever
    CUDA_VISIBLE_DEVICES says); the kernel releases them if the holder dies. A turnstile (`.gate`) gives a waiting
    timer priority: new shared holders queue behind it, so timing is never starved. The timers of one process (the
    machine's judge, timing every client's jobs) go first come, first served (`_Line`). A wait is bounded by
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
        if exclusive:  # in this process's line first; the first in line holds the turnstile, then takes the lock
            with _line(paths[0]).first(deadline) as first:
                if first and _acquire(gate, fcntl.LOCK_EX, deadline):
                    try:
                        acquired = _acquire(main, fcntl.LOCK_EX, deadline)
                    finally:
                        fcntl.flock(gate, fcntl.LOCK_UN)
        else:
            acquired = _take_shared(main, gate, deadline)
        try:
            yield LockWait(_perf_counter() - t0, acquired)
        finally:
            if acquired:
                fcntl.flock(main, fcntl.LOCK_UN)
