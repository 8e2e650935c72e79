"""A pool of judge slots on one device. A slot is the judge's side of one concurrent job: a reference runner (the
task's code only, kept across jobs) and a candidate runner (kept while its jobs end clean, else replaced at once,
see `Slot.after_job`). The judge itself runs in the calling thread of this process and never imports candidate
code.

A job that crashes, hangs or tampers with its runner ends as a verdict (`crash`, `timeout`, `output_tampering`);
only that runner is replaced.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from kernel_gym.errors import SandboxError
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.judge.faults import Cancel, gpu_fault, gpu_stalled, stall_probe_on
from kernel_gym.judge.judge_memory import (
    beyond_the_device,
    judge_out_of_memory,
    release_judge_memory,
    tidy_judge_memory,
)
from kernel_gym.judge.runners import ROOT_PREFIX
from kernel_gym.judge.slot import Slot
from kernel_gym.judge.stalls import StallLog
from kernel_gym.paths import sweep_dead
from kernel_gym.sandbox import isolation

log = logging.getLogger(__name__)


def sweep_stale_roots(tmp: Path | None = None) -> int:
    """Remove runner folders left behind by runners that died with their judge (their `pid` file names a dead
    process). Folders without a pid file are a runner still starting, and are left alone."""
    return sweep_dead(Path(tmp or tempfile.gettempdir()).glob(ROOT_PREFIX + "*"),
                      lambda root: int((root / "pid").read_text()))


JUDGE_OOM_RETRIES, JUDGE_OOM_BACKOFF_S = 3, 1.0
# Longest wait of a job that must run alone (an oom confirmation, the judge's last memory retry) for the others to
# finish; new jobs wait behind it only this long. Past it the job runs beside them, and an oom it meets there is no
# verdict (an infrastructure failure: nothing could be confirmed). KERNEL_GYM_ALONE_WAIT_S.
ALONE_WAIT_S = float(os.environ.get("KERNEL_GYM_ALONE_WAIT_S", "30") or 30)
# Reruns of a timeout met beside other jobs' faults: the first beside the other jobs, the last alone (judge/stalls.py)
TIMEOUT_RERUNS = 2


_OPEN: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _close_open_pools() -> None:
    for pool in list(_OPEN):
        pool.close()


class WorkerPool:
    """`size` judge slots on one device; `evaluate` blocks until a slot is free. Thread-safe. (The name is kept from
    the single-process sandbox this replaced: every user of a pool keeps working.)"""

    def __init__(self, device: str = "cpu", size: int = 1, gpus: list[int] | None = None,
                 memory_limit_gb: float | None = None):
        if size < 1:
            raise ValueError("a pool needs at least one worker")
        self.device, self.size, self.memory_limit_gb = device, size, memory_limit_gb
        self.gpus = gpus if gpus is not None else ([None] * size)
        sweep_stale_roots()
        isolation.preflight()  # once per process: a loud warning when runners would keep root (sandbox/isolation.py)
        self._idle: queue.Queue[Slot] = queue.Queue()
        self._all: list[Slot] = []
        self._closed = False
        _OPEN.add(self)  # closed at exit if its owner never did (no traceback from a half torn-down interpreter)
        self._count_lock = threading.Lock()
        self._turn = threading.Condition(self._count_lock)  # a job that must run alone waits for the others here
        self._running = self._started = 0  # jobs running now; jobs started so far (was a job ever alone?)
        self._alone_waiting = 0  # jobs waiting to run with nothing else on the pool (new jobs wait behind them)
        self._alone_running = False
        self.gpu_fault: str | None = None  # why the GPU failed the probe after a runner ended (None: usable)
        self.context_stuck = False  # the judge's own GPU context is unusable (judge/clock.py ContextStuck)
        self._stalls = StallLog()  # when candidate runners timed out or died (one may have stalled the others)
        for i in range(size):
            slot = Slot(device, self.gpus[i % len(self.gpus)], memory_limit_gb)
            self._all.append(slot)
            self._idle.put(slot)

    def evaluate(self, job: EvalJob, cancel: Cancel | None = None) -> EvalResult:
        """Judge one job on a free slot. Memory pressure from other jobs is never a verdict: when the judge itself
        runs out of GPU memory (its buffers, not the solution's), the job is run again once concurrent jobs have had
        time to free theirs, up to JUDGE_OOM_RETRIES times, the last of them alone; and an `oom` verdict reached
        while other jobs were in flight is confirmed by running the job once more, alone (it stands if the solution
        runs out of memory with nothing else running). No job waits on another for long: a job that cannot get the
        pool to itself within ALONE_WAIT_S runs beside the others, and an oom there is an infrastructure failure.
        Likewise a `timeout` reached while another job ended in a timeout or a crash (one kernel's fault can stall
        the GPU for every process: judge/stalls.py) is confirmed: by a rerun beside the other jobs, and, if that
        too times out beside another fault, by one alone.
        `cancel`: how the caller ends the job early (its client went away)."""
        judge_retries = oom_reruns = timeout_reruns = 0
        alone = False
        own_tokens: set[int] = set()  # this job's earlier runs (their faults are its own, not another job's)
        while True:
            try:
                result, shared, window = self._evaluate_once(job, alone=alone, cancel=cancel)
            except Exception as e:
                if judge_retries == JUDGE_OOM_RETRIES or not judge_out_of_memory(e) or (cancel and cancel.reason):
                    raise
                judge_retries += 1
                alone = judge_retries == JUDGE_OOM_RETRIES  # the last try has the GPU's memory to itself
                log.warning("the judge ran out of GPU memory on a job (%s); running it again (%d of %d%s)",
                            str(e).splitlines()[0][:200], judge_retries, JUDGE_OOM_RETRIES, ", alone" * alone)
                release_judge_memory(self.device)
                time.sleep(JUDGE_OOM_BACKOFF_S * 2 ** (judge_retries - 1))
                continue
            if result.outcome is Outcome.OOM and shared and not beyond_the_device(result.message, self.device):
                if not oom_reruns and not (cancel and cancel.reason):
                    oom_reruns += 1
                    alone = True  # the verdict stands only if the solution runs out of memory with nothing else running
                    log.info("an oom verdict while other jobs were running: confirming it alone")
                    continue
                if alone:  # the confirmation could not get the pool to itself: nothing was confirmed
                    result = result.replace(infra_failure=True, message=(
                        "out of GPU memory while other jobs were running, and the job could not be run alone within "
                        f"{ALONE_WAIT_S:g} s to confirm it; not a verdict on the solution:\n" + result.message))
            if result.outcome is Outcome.TIMEOUT and shared:
                if (timeout_reruns < TIMEOUT_RERUNS and not (cancel and cancel.reason)
                        and self._stalls.beside(*window, in_flight=self._in_flight(), own=own_tokens)):
                    timeout_reruns += 1
                    # first beside the others (the staller is gone: a timeout with no fault beside it is a verdict),
                    # alone only if that rerun met another fault too (a drain holds every new job behind it)
                    alone = timeout_reruns == TIMEOUT_RERUNS
                    own_tokens.add(window[0])
                    log.info("a timeout beside another job's fault: confirming it %s",
                             "alone" if alone else "beside the other jobs")
                    continue
                if alone and timeout_reruns:  # the confirmation could not get the pool to itself
                    result = result.replace(infra_failure=True, message=(
                        "timed out while other jobs' kernels faulted (a fault can stall the whole GPU), and the job "
                        f"could not be run alone within {ALONE_WAIT_S:g} s to confirm it; not a verdict on the "
                        "solution:\n" + result.message))
            extra = {k: float(v) for k, v in (("judge_oom_retries", judge_retries), ("oom_reruns", oom_reruns),
                                              ("timeout_reruns", timeout_reruns)) if v}
            return result.replace(stage_ms={**result.stage_ms, **extra}) if extra else result

    @property
    def alone_waiting(self) -> int:
        """Jobs waiting now to run with nothing else on the pool (every new job waits behind them)."""
        with self._count_lock:
            return self._alone_waiting

    def _enter(self, alone: bool) -> tuple[int, bool, bool]:
        """Count a job in. A job that must run alone waits until no other job runs (and new ones wait behind it),
        at most ALONE_WAIT_S; any other job waits while one is waiting to run alone or running. Returns (jobs
        started before, whether another job is running, whether this one runs alone)."""
        with self._turn:
            is_alone = False
            if alone:
                self._alone_waiting += 1
                try:
                    is_alone = self._turn.wait_for(lambda: self._running == 0 and not self._alone_running,
                                                   timeout=ALONE_WAIT_S)
                finally:
                    self._alone_waiting -= 1
                    self._turn.notify_all()
                self._alone_running = is_alone
            else:
                self._turn.wait_for(lambda: not self._alone_waiting and not self._alone_running)
            self._running += 1
            started, concurrent = self._started, self._running > 1
            self._started += 1
            return started, concurrent, is_alone

    def _leave(self, alone: bool) -> None:
        with self._turn:
            self._running -= 1
            if alone:
                self._alone_running = False
            self._turn.notify_all()

    def _evaluate_once(self, job: EvalJob, alone: bool = False, cancel: Cancel | None = None
                       ) -> tuple[EvalResult, bool, tuple[int, float, float]]:
        """One run on a free slot: its result, whether another job ran on this pool at any time during it, and its
        window in the pool's stall log (its token, start and end).
        `alone`: with no other job on the pool if that comes within ALONE_WAIT_S (memory other jobs hold cannot be
        the reason for its verdict)."""
        if self._closed:
            raise SandboxError("the worker pool is closed")
        t0 = time.monotonic()
        asked_alone = alone
        started, concurrent, alone = self._enter(alone)  # (before a slot is taken: a waiting job holds none)
        waited_ms = (time.monotonic() - t0) * 1e3
        if cancel is not None and cancel.reason:
            self._leave(alone)
            return (EvalResult(outcome=Outcome.CRASH, message=f"cancelled: {cancel.reason}", infra_failure=True),
                    False, (started, t0, t0))
        slot = self._idle.get()
        begun = time.monotonic()
        try:
            result = self._judged(slot, job, cancel, token=started)
            ended = time.monotonic()
            if asked_alone:  # how long it waited for the pool to itself
                result = result.replace(stage_ms={**result.stage_ms, "alone_wait": round(waited_ms, 3)})
            with self._count_lock:
                return result, concurrent or self._started - started > 1, (started, begun, ended)
        except BaseException:  # (a lost GPU context is a verdict of pipeline.execute, marked in _judged)
            slot.close()
            if not self._closed:
                fresh = Slot(self.device, slot.gpu, self.memory_limit_gb)
                self._all[self._all.index(slot)] = fresh
                slot = fresh
            raise
        finally:
            if not self._closed:
                tidy_judge_memory(self.device)
                self._idle.put(slot)
            self._leave(alone)

    def _in_flight(self) -> Callable[[], float | None]:
        """The calls running now in any slot; the returned function gives the latest run deadline of those of them
        still running (None once none is)."""
        running = [(r, r.calls) for s in list(self._all) for r in (s.cand, s.ref) if r.call_until is not None]

        def latest() -> float | None:
            deadlines = [r.call_until for r, n in running if r.calls == n and r.call_until is not None]
            return max(deadlines, default=None)
        return latest

    def _judged(self, slot: Slot, job: EvalJob, cancel: Cancel | None, token: int = -1) -> EvalResult:
        """The job judged on `slot` (judge/pipeline.py), with what the pool adds: the isolation of its runners, a
        runner replaced for it, an end from outside, a GPU probed after a runner died."""
        from kernel_gym.judge import pipeline
        from kernel_gym.judge.run import JudgeRun

        if self.gpu_fault is not None:  # (probed again: it may have come back; a stuck context never does)
            self.gpu_fault = self.gpu_fault if self.context_stuck else gpu_fault(self.device)
            if self.gpu_fault is not None:
                raise SandboxError(f"the GPU is not usable: {self.gpu_fault}")
        cand, ref = slot.runners()
        def on_fault(timed_out: bool = False) -> None:  # its call timed out (it is still alive), or it died
            stalling = not timed_out or not stall_probe_on(self.device) or gpu_stalled(self.device)
            self._stalls.record(token, call_start=cand.call_started, stalling=stalling)
        cand.on_fault = on_fault
        run = JudgeRun(job, cand, ref)
        if cancel is not None:
            cancel.attach(cand)
        result = None
        try:
            result = pipeline.execute(run)
        finally:
            cand.on_fault = None
            if cancel is not None:
                cancel.attach(None)
            run.close()
            replaced = slot.after_job(result)
        if cancel is not None and cancel.reason:  # ended from outside (its client left, the watchdog): no verdict
            result = EvalResult(outcome=Outcome.CRASH, backend=job.backend, infra_failure=True,
                                message=f"the judge ended this job: {cancel.reason}", stage_ms=result.stage_ms)
        if replaced and result.outcome not in (Outcome.CORRECT, Outcome.MISMATCH):
            result = result.replace(worker_recycled=True)  # this job's doing: say so
        record = isolation.for_job(cand, ref)  # what confined its runners, and whether its runner serves others
        result = result.replace(isolation={**record, "runner_reuse": slot.reuse} if record else record)
        if run.context_stuck:  # its verdict stands (a timeout); no later job can use this process's GPU context
            self.gpu_fault, self.context_stuck = "a timed call's wait never ended: the judge's GPU context is stuck", True
            log.critical("judge: %s (the shared judge exits so that its clients start another)", self.gpu_fault)
        elif result.outcome in (Outcome.TIMEOUT, Outcome.CRASH, Outcome.OOM):  # a runner died or was killed
            self.gpu_fault = gpu_fault(self.device)
            if self.gpu_fault is not None:
                log.error("the GPU is not usable after a job's runner ended: %s", self.gpu_fault)
        return result

    def __deepcopy__(self, memo: dict) -> WorkerPool:
        return self  # shared processes, not a value (gym.make deep-copies its kwargs)

    def warm_up(self) -> None:
        """Block until the runners of every idle slot are initialized (otherwise the first job waits for its
        runners). Safe while jobs run: a slot in use is skipped (its job has started its runners)."""
        slots = []
        try:
            while True:
                slots.append(self._idle.get_nowait())
        except queue.Empty:
            pass
        try:
            for slot in slots:
                slot.warm_up()
        finally:
            for slot in slots:
                self._idle.put(slot)

    def release_memory(self) -> None:
        """The judge's cached GPU memory back to the driver (its live buffers stay)."""
        release_judge_memory(self.device)

    def reserved_mb(self) -> float:
        """GPU memory the judge's process holds in torch's cache, live buffers included (0 on cpu)."""
        if self.device != "cuda":
            return 0.0
        import torch

        return round(torch.cuda.memory_reserved() / 2**20, 1)

    def runner_pids(self) -> list[int]:
        """The live runners the pool holds (every slot's reference, candidate and spare): any other runner process
        of this judge outlived its job."""
        return sorted(r.pid for s in list(self._all) for r in (s.ref, s.cand, s.spare) if r is not None and r.alive)

    def ready_slots(self) -> int:
        """Slots whose runners have both said ready (without waiting for any)."""
        return sum(s.ref.ready_info is not None and s.cand.ready_info is not None for s in list(self._all))

    def close(self) -> None:
        self._closed = True
        slots, self._all = list(self._all), []
        for slot in slots:
            slot.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()
