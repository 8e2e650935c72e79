"""The env's side of evaluation: the static rules (source only, `judged`), then an evaluator.

An evaluator is anything with `evaluate(job) -> EvalResult` and `close()`; it only evaluates (the judge and its
runners). `LocalEvaluator` owns a pool of judge slots on this machine; Ray actors and the HTTP service
(kernel_gym.integrations, kernel_gym.service) plug in with the same two methods. The static rules run in one place,
`judged`, which the env and `evaluate_many` call for every evaluator.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Protocol

from kernel_gym.errors import SandboxError
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome

log = logging.getLogger(__name__)
INFRA_RETRIES = 1  # a job the judge itself failed on runs once more before it is an infrastructure crash


class Evaluator(Protocol):
    def evaluate(self, job: EvalJob) -> EvalResult: ...

    def close(self) -> None: ...


def static_verdict(job: EvalJob) -> EvalResult | None:
    """REJECTED when a static rule of the job's preset fires, else None. Runs no candidate code."""
    from kernel_gym.checks import run_static_checks

    t0 = time.perf_counter()
    violations = run_static_checks(job.code, job.config.checks, backend=job.backend, task_dtype=job.dtype,
                                   allow_precision=job.allow_precision, task_source=job.task_source)
    ms = round((time.perf_counter() - t0) * 1e3, 3)
    if not violations:
        return None
    names = tuple(dict.fromkeys(v.rule for v in violations))
    details = tuple(f"[{v.rule}] {v.message}" for v in violations)  # messages already name their line
    return EvalResult(outcome=Outcome.REJECTED, message="\n".join(details), backend=job.backend, hacks=names,
                      hack_details=details, stage_ms={"checks": ms})


def judged(job: EvalJob, evaluator: Evaluator) -> EvalResult:
    """The static rules of the job's preset, then (when none fires) the evaluator. An evaluator that fails itself
    (`SandboxError`: a runner that cannot start, the task's reference failing, a closed pool) gives a `crash` marked
    `infra_failure`, not an exception: an env step or a rollout goes on, and its trainer can drop the turn."""
    rejected = static_verdict(job)
    return rejected if rejected is not None else evaluated(job, evaluator)


def evaluated(job: EvalJob, evaluator: Evaluator) -> EvalResult:
    """The evaluator's result, or the `infra_failure` crash of a `SandboxError` it raised."""
    try:
        return evaluator.evaluate(job)
    except SandboxError as e:
        return infra_crash(job, e)


def infra_crash(job: EvalJob, error: BaseException) -> EvalResult:
    """The result of a job the evaluator itself failed on: `crash`, marked `infra_failure`."""
    log.warning("the evaluator failed on a job of %s: %s", job.task_id, str(error).splitlines()[0][:300])
    return EvalResult(outcome=Outcome.CRASH, backend=job.backend, infra_failure=True,
                      message=f"the evaluation infrastructure failed on this job (not the solution's doing): {error}")


class LocalEvaluator:
    """Judges on this machine, started lazily, in the background. Evaluates only: the static rules run before it
    (`judged`).

    `shared` (default: True on cuda, False on cpu; `KERNEL_GYM_JUDGE=shared|private` overrides): the machine's judge
    for the device (one per GPU, shared by every client on the machine, `kernel_gym.judge.server`), so timing is
    exclusive by construction however many envs run; private: a pool of judge slots in this process."""

    def __init__(self, device: str = "cpu", workers: int = 1, gpus: list[int] | None = None,
                 memory_limit_gb: float | None = None, shared: bool | None = None):
        self.device, self.workers, self.gpus, self.memory_limit_gb = device, workers, gpus, memory_limit_gb
        mode = os.environ.get("KERNEL_GYM_JUDGE", "").strip().lower()
        self.shared = shared if shared is not None else (mode == "shared" or (mode != "private" and device == "cuda"))
        self._pool = None
        self._lock = threading.Lock()

    @property
    def pool(self):
        """The private pool, or the client of the machine's judge (both have `evaluate`, `warm_up`, `close`)."""
        with self._lock:
            if self._pool is None:
                if self.shared:
                    from kernel_gym.judge.client import JudgeClient, JudgeClients

                    slots = max(self.workers, int(os.environ.get("KERNEL_GYM_JUDGE_SLOTS", "8") or 8))
                    gpus = list(dict.fromkeys(self.gpus or [None])) if self.device == "cuda" else [None]
                    clients = [JudgeClient.for_device(self.device, g, slots, self.memory_limit_gb) for g in gpus]
                    self._pool = clients[0] if len(clients) == 1 else JudgeClients(clients)
                else:
                    from kernel_gym.judge.pool import WorkerPool

                    self._pool = WorkerPool(self.device, self.workers, self.gpus, self.memory_limit_gb)
            return self._pool

    def start(self) -> None:
        """Spawn the workers now so that the first step does not wait for them."""
        _ = self.pool

    def evaluate(self, job: EvalJob) -> EvalResult:
        """One job's result. A failure of the judge or its runners (a runner that could not start, the task's
        reference failing) is retried once on fresh runners, then is a `crash` marked `infra_failure` (so one job of
        a batch cannot fail the others)."""
        for attempt in range(INFRA_RETRIES + 1):
            try:
                return self.pool.evaluate(job)
            except SandboxError as e:
                error = e
                if attempt < INFRA_RETRIES:
                    log.warning("the evaluator failed on a job of %s (%s); trying once more", job.task_id,
                                str(e).splitlines()[0][:300])
        return infra_crash(job, error)

    def evaluate_many(self, jobs: list[EvalJob]) -> list[EvalResult]:
        """Evaluate jobs concurrently over the pool's workers; results in the order of `jobs`."""
        from concurrent.futures import ThreadPoolExecutor

        if not jobs:
            return []
        width = len(jobs) if self.shared else self.workers  # the shared judge schedules what it is sent
        with ThreadPoolExecutor(max_workers=max(1, min(width, len(jobs), 64))) as pool:
            return list(pool.map(self.evaluate, jobs))

    def __deepcopy__(self, memo: dict) -> LocalEvaluator:
        return self  # shared worker processes, not a value (gym.make deep-copies its kwargs)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None


def evaluate_many(jobs: list[EvalJob], *, workers: int = 1, evaluator: Evaluator | None = None) -> list[EvalResult]:
    """Evaluate many jobs (all on the device of the first): the static rules, then the evaluator, concurrently;
    results in the order of `jobs`."""
    if not jobs:
        return []
    results: list[EvalResult | None] = [static_verdict(j) for j in jobs]
    todo = [i for i, r in enumerate(results) if r is None]
    if todo:
        local = None
        if evaluator is None:
            evaluator = local = LocalEvaluator(jobs[0].config.device, workers=workers)
        try:
            many = getattr(evaluator, "evaluate_many", None)
            batch = [jobs[i] for i in todo]
            done = many(batch) if many else [evaluated(j, evaluator) for j in batch]
        finally:
            if local is not None:
                local.close()
        for i, r in zip(todo, done):
            results[i] = r
    return [r for r in results if r is not None]
