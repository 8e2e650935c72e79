"""The env's side of evaluation: static checks in-process (source only), then a sandbox worker.

An evaluator is anything with `evaluate(job) -> EvalResult` and `close()`; `LocalEvaluator` owns a worker
pool on this machine. Later backends (Ray, an HTTP service) plug in with the same two methods.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome


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


class LocalEvaluator:
    """Static checks, then a pool of sandbox workers on this machine (started lazily, in the background)."""

    def __init__(self, device: str = "cpu", workers: int = 1, gpus: list[int] | None = None,
                 memory_limit_gb: float | None = None):
        self.device, self.workers, self.gpus, self.memory_limit_gb = device, workers, gpus, memory_limit_gb
        self._pool = None
        self._lock = threading.Lock()

    @property
    def pool(self):
        with self._lock:
            if self._pool is None:
                from kernel_gym.sandbox import WorkerPool

                self._pool = WorkerPool(self.device, self.workers, self.gpus, self.memory_limit_gb)
            return self._pool

    def start(self) -> None:
        """Spawn the workers now so that the first step does not wait for them."""
        _ = self.pool

    def evaluate(self, job: EvalJob) -> EvalResult:
        rejected = static_verdict(job)
        if rejected is not None:
            return rejected
        return self.pool.evaluate(job)

    def evaluate_many(self, jobs: list[EvalJob]) -> list[EvalResult]:
        """Evaluate jobs concurrently over the pool's workers; results in the order of `jobs`."""
        from concurrent.futures import ThreadPoolExecutor

        if not jobs:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(jobs)))) as pool:
            return list(pool.map(self.evaluate, jobs))

    def __deepcopy__(self, memo: dict) -> LocalEvaluator:
        return self  # shared worker processes, not a value (gym.make deep-copies its kwargs)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None


def evaluate_many(jobs: list[EvalJob], *, workers: int = 1, evaluator: Evaluator | None = None) -> list[EvalResult]:
    """Evaluate many jobs (all on the device of the first) and return their results in order."""
    if not jobs:
        return []
    if evaluator is not None:
        many = getattr(evaluator, "evaluate_many", None)
        return many(jobs) if many else [evaluator.evaluate(j) for j in jobs]
    local = LocalEvaluator(jobs[0].config.device, workers=workers)
    try:
        return local.evaluate_many(jobs)
    finally:
        local.close()


def evaluator_from_spec(spec: str | None = None, *, device: str = "cpu", workers: int = 1) -> Evaluator:
    """Build an evaluator from a short spec string (flags and env vars carry it, e.g. KERNEL_GYM_EVALUATOR).

    - None, "" or "local": a `LocalEvaluator` (worker pool on this machine);
    - "ray" or "ray://host:port" / "ray:auto": a `kernel_gym.integrations.ray.RayEvaluator` (connects to that cluster);
    - "http://host:port" or "https://...": a `kernel_gym.service.client.ServiceEvaluator` for `kernel-gym serve`.
    """
    spec = (spec or "").strip()
    if spec in ("", "local"):
        return LocalEvaluator(device, workers=workers)
    if spec == "ray" or spec.startswith("ray:"):
        from kernel_gym.integrations.ray import RayEvaluator

        address = spec[4:].lstrip("/") if spec.startswith("ray:") else None
        if spec.startswith("ray://"):
            address = spec
        return RayEvaluator(address=address or None)
    if spec.startswith(("http://", "https://")):
        from kernel_gym.service.client import ServiceEvaluator

        return ServiceEvaluator(spec)
    raise ValueError(f"unknown evaluator spec {spec!r}: use 'local', 'ray[:address]' or 'http(s)://host:port'")
