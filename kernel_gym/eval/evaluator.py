"""The env's side of evaluation: the static rules (source only), then an evaluator (`evaluate_job`).

An evaluator is anything with `evaluate(job) -> EvalResult` and `close()`; it only evaluates (the judge and its
runners). `kernel_gym.judge.local.LocalEvaluator` uses the judge on this machine; Ray actors and the HTTP service
(kernel_gym.integrations, kernel_gym.service) plug in with the same two methods. The static rules run in one place,
`evaluate_job`, which the env, the service and `evaluate_many` call for every evaluator.
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import Any, Protocol

from kernel_gym.errors import SandboxError
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome

log = logging.getLogger(__name__)


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


def evaluate_job(job: EvalJob, evaluator: Evaluator) -> EvalResult:
    """The static rules of the job's preset, then (when none fires) the evaluator. An evaluator that fails itself
    (`SandboxError`: a runner that cannot start, the task's reference failing, a closed pool) gives a `crash` marked
    `infra_failure`, not an exception: an env step or a rollout goes on, and its trainer can drop the turn. A job of a
    GPU-only backend (CuTe DSL, TileLang: kernel_gym.backends) on the CPU backend is `unsupported` once its static
    rules pass: nothing of it can run there."""
    rejected = static_verdict(job)
    if rejected is not None:
        return rejected
    unsupported = cpu_unsupported(job)
    return unsupported if unsupported is not None else evaluated(job, evaluator)


def cpu_unsupported(job: EvalJob) -> EvalResult | None:
    """UNSUPPORTED for a job whose backend has no CPU execution (e.g. CuTe DSL code that `backend="auto"` found on
    a cpu env), else None."""
    from kernel_gym.backends import cpu_refusal, gpu_only

    if job.config.device != "cpu" or not gpu_only(job.backend):
        return None
    return EvalResult(outcome=Outcome.UNSUPPORTED, backend=job.backend,
                      message="the static checks passed, but " + cpu_refusal(job.backend))


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


def __getattr__(name: str) -> Any:
    if name in ("LocalEvaluator", "evaluate_many"):  # their home before 0.2, kept for the users who import them here
        warnings.warn(f"kernel_gym.eval.evaluator.{name} is kernel_gym.judge.local.{name} (or kernel_gym.{name})",
                      DeprecationWarning, stacklevel=2)
        from kernel_gym.judge import local

        return getattr(local, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
