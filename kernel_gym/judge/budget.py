"""One job's time limits as its runners' requests spend them: compiling and running are separate limits.

Every request has its own run limit (a call: max(2 s, 50x the reference's call) on cuda, max(30 s, 1000x) on cpu;
loading and constructing: `SETUP_LIMIT_S`), the first call included. While the runner compiles (Triton's JIT,
NVRTC, a `load_inline` build, the profiler's start: `kernel_gym.harness.phases`) the request is under the job's
compile budget instead (`compile_timeout_s`, for all of the job's compiling together), and the job lets go of its
share of the GPU: a compile never makes a timer wait, and the time a timer makes the job wait to take its share back
counts against no limit. After each compile segment the request's run limit and the job's (`run_timeout_s`) move by
the segment's length: compiling is not counted and running is counted whole, so a solution that forges segments
gains at most the compile budget, never a run limit that starts again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kernel_gym.judge.gpu_lock import SharedHold

SETUP_LIMIT_S = 30.0  # begin, load (import) and build (construct ModelNew): not calls, but never a compile's length


@dataclass
class Budget:
    compile_left_s: float
    """Compile time the job has left (its compile segments and load_inline builds together)."""
    run_deadline: float = float("inf")
    """time.monotonic() past which no run segment goes (the job's run limit, set when correctness starts)."""
    hold: SharedHold | None = None
    """The job's share of the GPU while it holds one (checks beside other jobs); None: none, or the whole GPU."""
    compile_ms: float = 0.0
    share_wait_ms: float = 0.0
    segments: int = 0
    in_compile: bool = False
    _since: float = 0.0

    def begin_compile(self) -> float:
        """A compile segment starts: the GPU share is let go of; returns the segment's deadline."""
        if not self.in_compile:
            self.in_compile, self._since = True, time.monotonic()
            self.segments += 1
            if self.hold is not None:
                self.hold.let_go()
        return self._since + self.compile_left_s

    def end_compile(self) -> float:
        """The segment is over: its time is spent, the GPU share is taken back; returns the seconds the request's
        run limit and the job's move by (the segment and the wait for the share: neither is running)."""
        if not self.in_compile:
            return 0.0
        spent = time.monotonic() - self._since
        self.in_compile = False
        self.compile_left_s = max(self.compile_left_s - spent, 0.0)
        self.compile_ms += spent * 1e3
        waited = self.hold.take() if self.hold is not None else 0.0
        self.share_wait_ms += waited * 1e3
        self.run_deadline += spent + waited
        return spent + waited
