"""How a job ends: the result the judge gives from a finished pipeline, a check's verdict (`Hack`), an ordinary end
(`Stop`), a runner's reported error, or a runner's failure (killed, timed out, its channel tampered with)."""

from __future__ import annotations

from typing import Any

from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.judge.dynamic.registry import Stop


def result(jr: Any, outcome: Outcome, message: str, **fields: Any) -> EvalResult:
    compiled = jr.compiled or outcome in (Outcome.CORRECT, Outcome.MISMATCH) or (
        jr.stage != "compile" and outcome is not Outcome.COMPILE_ERROR)
    if jr.cand.runner.build_ms:  # inside compile (or a check that built again): the build service's share
        jr.stage_ms["build"] = round(jr.cand.runner.build_ms, 3)
    if jr.budget.segments:  # compiling (builds included), under the compile budget, holding no GPU
        jr.stage_ms["compile_segments"] = round(jr.budget.compile_ms, 3)
        jr.stage_ms["gpu_share_rewait"] = round(jr.budget.share_wait_ms, 3)
    return EvalResult(outcome=outcome, message=message, backend=jr.job.backend, compiled=compiled,
                      stage_ms=dict(jr.stage_ms), signals=dict(jr.signals), worker_recycled=jr.recycle,
                      correctness=jr.oracle.info(), **fields)


def runner_error(jr: Any, error: dict[str, Any], side: Any) -> None:
    """A runner reported an exception (candidate code, or the task's own on the reference side): raises."""
    if side is jr.ref:
        from kernel_gym.errors import SandboxError

        raise SandboxError(f"the task's reference failed ({error.get('outcome')}): {error.get('message')}")
    if error.get("poisoned"):
        jr.recycle = True
    extra = error.get("extra") or {}
    jr.signals.update({k: float(v) for k, v in (extra.get("signals") or {}).items() if isinstance(v, (int, float))})
    try:
        outcome = Outcome(error.get("outcome", "runtime_error"))
    except ValueError:
        outcome = Outcome.RUNTIME_ERROR
    if outcome is Outcome.CORRECT:  # a runner does not say what is correct
        outcome = Outcome.RUNTIME_ERROR
    message = str(error.get("message", ""))[:20_000]  # (runner text: where it failed, its frames)
    if outcome is Outcome.UNSUPPORTED and "compile_check" in extra:  # CUDA on cpu: compiled is the judge's call
        from kernel_gym.judge import compile_check

        ok, why = compile_check.verify(extra["compile_check"], jr.job.code, jr.signals)
        if not ok:
            raise Stop(Outcome.COMPILE_ERROR, why)
        jr.compiled = True
    raise Stop(outcome, message)


def runner_failure(jr: Any, failure: Any) -> EvalResult:
    """A runner killed at a limit, dead, or whose channel was tampered with (judge/runners.py RunnerFailure)."""
    jr.recycle = True
    if failure.kind == "timeout":
        return result(jr, Outcome.TIMEOUT, f"the {jr.stage} stage did not finish within "
                      f"{jr.limits.timeout_text(failure.message, jr.stage)} (an infinite loop, a deadlock, a kernel "
                      "that never ends, or far too much work); the process was killed")
    if failure.kind == "tampered":
        why = failure.message
        return result(jr, Outcome.REJECTED, f"the result channel was tampered with: {why}",
                      hacks=("output_tampering",), hack_details=(why,))
    return result(jr, Outcome(failure.kind), failure.message)
