"""When one job's fault can stall the others: the pool's log of when candidate runners timed out or died.

On an H100, a kernel that executes `__trap()` stalls every other process's work on the GPU until its own runner is
killed at its limit: in the 20 % fault run of `benchmarks/bench_faults.py` (2026-12-07), two genuine kernels whose
first calls fell in that window were `timeout` at the same second as the trap (benchmarks/RESULTS.md, "Fault
isolation, fourth GPU session"). A timeout is therefore a verdict only when nothing else went wrong beside it: a
timeout reached while another job's candidate runner timed out or died (from the start of the call that timed out,
less SETTLE_S, until the calls then running in other jobs have ended or reached their own limits, since the staller
may have the longer limit) is confirmed by running the job again (`WorkerPool.evaluate`): beside the other jobs
first (the staller's runner is gone; a rerun that times out with no fault beside it keeps the verdict), and alone
only when the rerun too timed out beside another fault. The trap's job times out again and keeps its verdict, the
genuine ones are judged, and the pool drains only for a job that met faults twice (a drain held throughput at 0.64x
at 20 % faults on an H100: every new job waited behind it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection

SETTLE_S = 1.0  # a fault's own end may come just after the end of a call it stalled
MAX_SETTLE_S = 30.0  # the longest wait for other jobs' calls in flight
KEEP_S = 900.0  # how long a fault is remembered (longer than any job)


class StallLog:
    """Thread-safe times at which a pool's candidate runners timed out or died, each with its job's token."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (when, the job's token, its faulted call's start, whether it may have stalled the GPU for other jobs)
        self._ends: list[tuple[float, int, float | None, bool]] = []

    def record(self, token: int, when: float | None = None, call_start: float | None = None,
               stalling: bool = True) -> None:
        """A candidate runner of job `token` timed out or died at `when`, in a call that began at `call_start`.
        `stalling=False`: the GPU ran other work at its timeout (judge/faults.py `gpu_stalled`), so it is no reason
        to confirm another job's timeout; it still marks its own job's call."""
        when = time.monotonic() if when is None else when
        with self._lock:
            self._ends = [e for e in self._ends if when - e[0] < KEEP_S]
            self._ends.append((when, token, call_start, stalling))

    def beside(self, token: int, since: float, until: float,
               in_flight: Callable[[], float | None] = lambda: None, own: Collection[int] = ()) -> int:
        """How many other jobs' runners faulted between `since` and the end of the wait (`own`: the tokens of the
        same job's earlier runs, whose faults are its own). Where the job recorded its own
        fault with its call's start, the window begins there (less SETTLE_S), not at `since`: a fault that ended
        before the call that timed out began cannot have stalled it (a staller's fault is recorded when its stall
        ends, at its runner's timeout or death), and a job's earlier calls finished. The wait lasts SETTLE_S after
        `until`, and while `in_flight()` names a deadline (the latest of the calls other jobs had running at `until`
        that are still running) until SETTLE_S after it; at most MAX_SETTLE_S after `until`."""
        with self._lock:
            starts = [c for _, k, c, _ in self._ends if k == token and c is not None]
        if starts:
            since = max(since, max(starts) - SETTLE_S)
        cap, end = until + MAX_SETTLE_S, until + SETTLE_S
        while True:
            deadline = in_flight()
            if deadline is not None:  # (a call still running: wait for its end or its limit, and SETTLE_S more)
                end = max(end, min(deadline + SETTLE_S, cap))
            now = time.monotonic()
            if now >= end or (deadline is None and now >= until + SETTLE_S):
                break
            time.sleep(min(0.05, end - now))
        with self._lock:  # (up to now: a call that ended early is in the log, or was not a fault)
            return sum(1 for t, k, _, stalling in self._ends
                       if k != token and k not in own and stalling and since <= t <= now)
