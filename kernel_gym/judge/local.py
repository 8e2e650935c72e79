"""The judge on this machine as an evaluator: `LocalEvaluator` (the machine's shared judge per GPU, or a private
pool of judge slots in this process) and `evaluate_many` (the static rules, then an evaluator, over many jobs)."""

from __future__ import annotations

import logging
import os
import threading

from kernel_gym.errors import SandboxError
from kernel_gym.eval.evaluator import Evaluator, evaluated, infra_crash, static_verdict
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult

log = logging.getLogger(__name__)
INFRA_RETRIES = 1  # a job the judge itself failed on runs once more before it is an infrastructure crash


class LocalEvaluator:
    """Judges on this machine, started lazily, in the background. Evaluates only: the static rules run before it
    (`kernel_gym.eval.evaluator.evaluate_job`).

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
