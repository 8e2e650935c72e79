"""A judge slot: the judge's side of one concurrent job, its two runners (the reference's, the task's code only,
kept across jobs while the judge finds it as it left it; the candidate's, a fresh one per job where runners are forked
in milliseconds, else kept while its jobs end clean; a replaced one's successor is a spare started ahead)."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.judge.runners import RunnerProcess
from kernel_gym.sandbox import limits

log = logging.getLogger(__name__)

MAX_JOBS_PER_RUNNER = 32
# Keep a started candidate runner in reserve once one has been replaced (KERNEL_GYM_SPARE_RUNNERS=0: none; costs one
# more process per slot, on cuda one more CUDA context).
SPARE_RUNNERS = os.environ.get("KERNEL_GYM_SPARE_RUNNERS", "1") != "0"
END_LIMIT_S = 10.0  # a candidate runner's end of a job (dropping its modules, models and memory)
REUSE_POLICIES = ("never", "clean")


def candidate_reuse(device: str) -> str:
    """Whether a candidate runner serves more than one job (`KERNEL_GYM_RUNNER_REUSE`). "never": every job gets a
    runner no earlier job ran in, so nothing a candidate leaves in its process (patched functions, native state: what
    the runner's own, forgeable report cannot vouch for) reaches another job. "clean": a runner serves the next job
    after a clean one (`Slot.after_job`), which saves a start where starts are slow. Unset: "never" where runners are
    forked from the fork server (cpu: a start costs milliseconds), "clean" where each is a fresh interpreter (cuda:
    ~8 s of imports and CUDA initialization a start, measured on an H100, hidden by the spare only when replacements
    are rare)."""
    from kernel_gym.errors import ConfigError
    from kernel_gym.judge import spawner

    policy = os.environ.get("KERNEL_GYM_RUNNER_REUSE", "")
    if policy and policy not in REUSE_POLICIES:
        raise ConfigError(f"KERNEL_GYM_RUNNER_REUSE={policy!r}: expected one of {', '.join(REUSE_POLICIES)}")
    return policy or ("never" if spawner.enabled(device) else "clean")


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
        self.reuse = candidate_reuse(device)
        self.ref = self._spawn("reference")
        self.cand = self._spawn("candidate")
        self.spare: RunnerProcess | None = None  # the next candidate runner, started when this one was replaced
        self.cand_jobs = 0
        self.cand_threads: int | None = None  # the candidate runner's native threads after its last clean job
        self.ref_baseline: dict | None = None  # the reference runner's scheduling, limits and cgroup when it started

    def _spawn(self, role: str) -> RunnerProcess:
        return RunnerProcess(self.device, self.gpu, self.memory_limit_gb, role=role)

    def runners(self) -> tuple[RunnerProcess, RunnerProcess]:
        """The slot's runners for the next job. The reference runner serves it only as the judge left it: its
        threads' scheduling policy, priority, nice, affinity, I/O priority, cgroup and its resource limits as when it
        started (judge/ref_guard.py); otherwise it is replaced (a candidate that got past the seccomp rules against
        other processes would have slowed the reference, and every later job's speedup with it)."""
        from kernel_gym.judge import ref_guard

        if self.ref.alive and self.ref_baseline is not None:
            why = ref_guard.changed(self.ref.pid, self.ref_baseline)
            if why is not None:
                log.warning("the reference runner was changed by another process (%s); replacing it", why)
                self.ref.kill()
        if not self.ref.alive:
            self.ref, self.ref_baseline = self._spawn("reference"), None
        if self.ref_baseline is None:
            self.ref.wait_ready()
            self.ref_baseline = ref_guard.snapshot(self.ref.pid)
        if not self.cand.alive:
            self.replace_candidate()
        return self.cand, self.ref

    def replace_candidate(self) -> None:
        """The spare (started at the last replacement, so usually ready) takes over, and a new spare starts now: a
        replaced runner costs the next job no start-up (torch, triton and CUDA imported and initialized). The old
        one and every process it started are killed before this returns (reaped in the background): no process of
        a job outlives its verdict."""
        old = self.cand
        old.kill_now()
        spare = self.spare if self.spare is not None and self.spare.alive else None
        self.cand = spare or self._spawn("candidate")
        self.spare = self._spawn("candidate") if SPARE_RUNNERS else None
        self.cand_jobs, self.cand_threads = 0, None
        threading.Thread(target=old.kill, daemon=True, name="kernel-gym-runner-reap").start()

    def after_job(self, result: EvalResult | None) -> bool:
        """End the job in both runners. Under the "never" reuse policy the candidate's runner is replaced after every
        job. Under "clean" it serves the next job only when nothing about this one is suspect: a correct or
        mismatching verdict; no thread, process or harness change left behind and no process-wide change the runner
        could not put back (a module planted in sys.modules, which the next job's solution would meet) (its own
        report); no more native threads than after its previous job (the judge's own count); and fewer than
        MAX_JOBS_PER_RUNNER jobs. Otherwise it is replaced now (the next one starts while the
        caller goes on). Returns True when it was replaced."""
        self._end(self.ref)
        if self.reuse == "never":
            self.replace_candidate()
            return True
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
            # (a candidate's objects' __del__ runs in it: its verdict waits at most END_LIMIT_S for a clean end)
            report = runner.request("end", deadline=_soon(END_LIMIT_S if strays else 30.0), stage="compile")
        except Exception:  # noqa: BLE001 - a runner that cannot end a job is replaced
            runner.kill()
            return None
        runner.retire_shared()  # (it let go of the job's buffers; the judge releases torch's count of them)
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
    return time.monotonic() + seconds
