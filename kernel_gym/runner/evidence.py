"""What a runner's call reports besides its outputs, taken around the model's call: the ops it dispatched (the op
audit), its share of the device time (the profiler), the outputs' structure as plain JSON values; and a failure of
candidate (or task) code as the runner reports it.

These helpers are bound into `kernel_gym.runner.session`, whose attributes the harness snapshot watches
(harness/integrity.py); they reach the audit and the profiler through those modules at each call, as the session did.
"""

from __future__ import annotations

from typing import Any

from kernel_gym.harness.errors import classify, describe_failure


def audited(run: Any, args: list[Any], evidence: dict[str, Any]) -> Any:
    """`run` under the op audit: the ops it dispatches go into `evidence["ops"]`."""
    from kernel_gym.harness.op_audit import audit as run_audit

    def audited_run() -> Any:
        out, ops = run_audit(run, args)  # (forward's inputs: a reduction of one is no final step)
        evidence["ops"] = ops
        return out

    return audited_run


def profiled(run: Any, evidence: dict[str, Any], *, own_names: list[str], exclude_library_gemm: bool,
             gated: list[Any], exclude_kernels: list[str]) -> Any:
    """`run` under the profiler: its output, and the solution's share of the device time in `evidence["profile"]`."""
    from kernel_gym.harness.profile import profile_call

    box: list[Any] = []
    prof = profile_call(lambda: box.append(run()), set(own_names), exclude_library_gemm=exclude_library_gemm,
                        gated=gated, exclude=exclude_kernels)  # (the library policy's allowed kernels: harness/profile.py)
    out = box[0]
    evidence["profile"] = {"share": prof.share, "total_ms": prof.total_ms, "top": list(prof.top),
                           "ungated": list(prof.ungated), "stream_check_skipped": prof.skipped}
    return out


def json_value(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)[:200]


def flatten(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def failure(exc: BaseException, stage: str) -> dict[str, Any]:
    """An exception of candidate (or task) code as the runner reports it: an outcome and a readable message."""
    outcome, poisoned = classify(exc, stage)
    return {"outcome": outcome.value, "message": describe_failure(exc, stage), "poisoned": poisoned}
