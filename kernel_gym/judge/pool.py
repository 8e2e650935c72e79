"""A pool of judge slots on one device. A slot is the judge's side of one concurrent job: a reference runner (the
task's code only, kept across jobs) and a candidate runner (kept while its jobs end clean, else replaced at once,
see `Slot.after_job`). The judge itself runs in the calling thread of this process and never imports candidate
code.

A job that crashes, hangs or tampers with its runner ends as a verdict (`crash`, `timeout`, `output_tampering`);
only that runner is replaced.
"""

from __future__ import annotations

import logging
import os
import queue
import tempfile
import threading
import time
from pathlib import Path

from kernel_gym.errors import SandboxError
from kernel_gym.eval.errors import GPU_MEMORY_MARKERS
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.judge.runners import ROOT_PREFIX, RunnerProcess
from kernel_gym.paths import sweep_dead
from kernel_gym.sandbox import limits

log = logging.getLogger(__name__)


def sweep_stale_roots(tmp: Path | None = None) -> int:
    """Remove runner folders left behind by runners that died with their judge (their `pid` file names a dead
    process). Folders without a pid file are a runner still starting, and are left alone."""
    return sweep_dead(Path(tmp or tempfile.gettempdir()).glob(ROOT_PREFIX + "*"),
                      lambda root: int((root / "pid").read_text()))


MAX_JOBS_PER_RUNNER = 32
# Keep a started candidate runner in reserve once one has been replaced (KERNEL_GYM_SPARE_RUNNERS=0: none; costs one
# more process per slot, on cuda one more CUDA context).
SPARE_RUNNERS = os.environ.get("KERNEL_GYM_SPARE_RUNNERS", "1") != "0"
JUDGE_OOM_RETRIES, JUDGE_OOM_BACKOFF_S = 3, 1.0


def judge_out_of_memory(exc: BaseException) -> bool:
    """An exception that escaped a JudgeRun (the judge's own, a runner that could not start, the task's reference)
    saying GPU memory ran out: memory other jobs hold, run again."""
    import torch

    text = str(exc).lower()
    return isinstance(exc, torch.OutOfMemoryError) or any(m in text for m in GPU_MEMORY_MARKERS)


TIGHT_MEMORY = 0.15  # after a job, the judge gives its cached GPU memory back when less than this share is free


def tidy_judge_memory(device: str) -> None:
    """After a job: when the GPU is nearly full, the judge's cached blocks go back to the driver (the next job's
    runners may need them); otherwise they stay for the next job's buffers."""
    if device != "cuda":
        return
    import torch

    free, total = torch.cuda.mem_get_info()
    if free < TIGHT_MEMORY * total:
        _release_judge_memory(device)


def _release_judge_memory(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.ipc_collect()  # buffers shared with runners that have let go of them (torch keeps those apart)
        torch.cuda.empty_cache()  # what the jobs' buffers held goes back to the driver for the others


def native_threads(pid: int) -> int:
    """Threads of a process as the kernel counts them (native ones included), read by the judge from /proc."""
    try:
        return len(list(Path(f"/proc/{pid}/task").iterdir()))
    except OSError:
        return 0


class Slot:
    """One concurrent job's runners: the candidate's and the reference's."""

    def __init__(self, device: str, gpu: int | None, memory_limit_gb: float | None):
        self.device, self.gpu, self.memory_limit_gb = device, gpu, memory_limit_gb
        self.ref = self._spawn("reference")
        self.cand = self._spawn("candidate")
        self.spare: RunnerProcess | None = None  # the next candidate runner, started when this one was replaced
        self.cand_jobs = 0
        self.cand_threads: int | None = None  # the candidate runner's native threads after its last clean job

    def _spawn(self, role: str) -> RunnerProcess:
        return RunnerProcess(self.device, self.gpu, self.memory_limit_gb, role=role)

    def runners(self) -> tuple[RunnerProcess, RunnerProcess]:
        if not self.ref.alive:
            self.ref = self._spawn("reference")
        if not self.cand.alive:
            self.replace_candidate()
        return self.cand, self.ref

    def replace_candidate(self) -> None:
        """The spare (started at the last replacement, so usually ready) takes over, and a new spare starts now: a
        replaced runner costs the next job no start-up (torch, triton and CUDA imported and initialized)."""
        old = self.cand
        spare = self.spare if self.spare is not None and self.spare.alive else None
        self.cand = spare or self._spawn("candidate")
        self.spare = self._spawn("candidate") if SPARE_RUNNERS else None
        self.cand_jobs, self.cand_threads = 0, None
        threading.Thread(target=old.stop, daemon=True, name="kernel-gym-runner-stop").start()

    def after_job(self, result: EvalResult | None) -> bool:
        """End the job in both runners. The candidate's runner serves the next job only when nothing about this one
        is suspect: a correct or mismatching verdict; no thread, process or harness change left behind and no
        process-wide change the runner could not put back (a module planted in sys.modules, which the next job's
        solution would meet) (its own report); no more native threads than after its previous job (the judge's own
        count); and fewer than MAX_JOBS_PER_RUNNER jobs. Otherwise it is replaced now (the next one starts while the
        caller goes on). Returns True when it was replaced."""
        self._end(self.ref)
        clean = result is not None and result.outcome in (Outcome.CORRECT, Outcome.MISMATCH) and not result.hacks
        report = self._end(self.cand, strays=True) if clean and self.cand.alive else None
        self.cand_jobs += 1
        threads = native_threads(self.cand.pid)
        clean = (report is not None and not report.get("leftover_threads") and not report.get("harness")
                 and not report.get("state") and (self.cand_threads is None or threads <= self.cand_threads)
                 and self.cand_jobs < MAX_JOBS_PER_RUNNER)
        if clean:
            self.cand_threads = threads
            return False
        self.replace_candidate()
        return True

    @staticmethod
    def _end(runner: RunnerProcess, strays: bool = False) -> dict | None:
        if not runner.alive:
            return None
        try:
            report = runner.request("end", deadline=_soon(), stage="compile")
        except Exception:  # noqa: BLE001 - a runner that cannot end a job is replaced
            runner.kill()
            return None
        if strays:  # processes a candidate's job started, killed by the judge, who sees every process (a runner
            # under `landlock_proc` cannot read other processes' /proc to find its own; it is their subreaper, so
            # orphans count). The reference's runner, unconfined there, kills its own.
            limits.kill_descendants(runner.pid)
        return report

    def warm_up(self) -> None:
        self.ref.wait_ready()
        self.cand.wait_ready()

    def close(self) -> None:
        for r in (self.cand, self.ref, self.spare):
            if r is not None:
                r.kill()


def _soon(seconds: float = 30.0) -> float:
    import time

    return time.monotonic() + seconds


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
        self._idle: queue.Queue[Slot] = queue.Queue()
        self._all: list[Slot] = []
        self._closed = False
        self._count_lock = threading.Lock()
        self._turn = threading.Condition(self._count_lock)  # a job that must run alone waits for the others here
        self._running = self._started = 0  # jobs running now; jobs started so far (was a job ever alone?)
        self._alone_waiting = 0  # jobs waiting to run with nothing else on the pool (new jobs wait behind them)
        self._alone_running = False
        for i in range(size):
            slot = Slot(device, self.gpus[i % len(self.gpus)], memory_limit_gb)
            self._all.append(slot)
            self._idle.put(slot)

    def evaluate(self, job: EvalJob) -> EvalResult:
        """Judge one job on a free slot. Memory pressure from other jobs is never a verdict: when the judge itself
        runs out of GPU memory (its buffers, not the solution's), the job is run again once concurrent jobs have had
        time to free theirs, up to JUDGE_OOM_RETRIES times, the last of them alone; and an `oom` verdict reached
        while other jobs were in flight is confirmed by running the job once more, alone (it stands if the solution
        runs out of memory with nothing else running)."""
        judge_retries = oom_reruns = 0
        alone = False
        while True:
            try:
                result, shared = self._evaluate_once(job, alone=alone)
            except Exception as e:
                if judge_retries == JUDGE_OOM_RETRIES or not judge_out_of_memory(e):
                    raise
                judge_retries += 1
                alone = judge_retries == JUDGE_OOM_RETRIES  # the last try has the GPU's memory to itself
                log.warning("the judge ran out of GPU memory on a job (%s); running it again (%d of %d%s)",
                            str(e).splitlines()[0][:200], judge_retries, JUDGE_OOM_RETRIES, ", alone" * alone)
                _release_judge_memory(self.device)
                time.sleep(JUDGE_OOM_BACKOFF_S * 2 ** (judge_retries - 1))
                continue
            if result.outcome is Outcome.OOM and shared and not oom_reruns:
                oom_reruns += 1
                alone = True  # the verdict stands only if the solution runs out of memory with nothing else running
                log.info("an oom verdict while other jobs were running: confirming it alone")
                continue
            extra = {k: float(v) for k, v in (("judge_oom_retries", judge_retries), ("oom_reruns", oom_reruns)) if v}
            return result.replace(stage_ms={**result.stage_ms, **extra}) if extra else result

    @property
    def alone_waiting(self) -> int:
        """Jobs waiting now to run with nothing else on the pool (every new job waits behind them)."""
        with self._count_lock:
            return self._alone_waiting

    def _enter(self, alone: bool) -> tuple[int, bool]:
        """Count a job in. A job that must run alone waits until no other job runs (and new ones wait behind it);
        any other job waits while one is waiting to run alone or running. Returns (jobs started before, whether
        another job is running)."""
        with self._turn:
            if alone:
                self._alone_waiting += 1
                try:
                    self._turn.wait_for(lambda: self._running == 0 and not self._alone_running)
                finally:
                    self._alone_waiting -= 1
                self._alone_running = True
            else:
                self._turn.wait_for(lambda: not self._alone_waiting and not self._alone_running)
            self._running += 1
            started, concurrent = self._started, self._running > 1
            self._started += 1
            return started, concurrent

    def _leave(self, alone: bool) -> None:
        with self._turn:
            self._running -= 1
            if alone:
                self._alone_running = False
            self._turn.notify_all()

    def _evaluate_once(self, job: EvalJob, alone: bool = False) -> tuple[EvalResult, bool]:
        """One run on a free slot: its result, and whether another job ran on this pool at any time during it.
        `alone`: with no other job on the pool (memory other jobs hold cannot be the reason for its verdict)."""
        if self._closed:
            raise SandboxError("the worker pool is closed")
        from kernel_gym.judge.run import JudgeRun

        t0 = time.monotonic()
        started, concurrent = self._enter(alone)  # (before a slot is taken: a waiting job holds none)
        waited_ms = (time.monotonic() - t0) * 1e3
        slot = self._idle.get()
        try:
            cand, ref = slot.runners()
            run = JudgeRun(job, cand, ref)
            result = None
            try:
                result = run.execute()
            finally:
                run.close()
                replaced = slot.after_job(result)
            if replaced and result.outcome not in (Outcome.CORRECT, Outcome.MISMATCH):
                result = result.replace(worker_recycled=True)  # this job's doing: say so
            if alone:  # how long it waited for the pool to itself
                result = result.replace(stage_ms={**result.stage_ms, "alone_wait": round(waited_ms, 3)})
            with self._count_lock:
                return result, concurrent or self._started - started > 1
        except BaseException:
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
        _release_judge_memory(self.device)

    def reserved_mb(self) -> float:
        """GPU memory the judge's process holds in torch's cache, live buffers included (0 on cpu)."""
        if self.device != "cuda":
            return 0.0
        import torch

        return round(torch.cuda.memory_reserved() / 2**20, 1)

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
