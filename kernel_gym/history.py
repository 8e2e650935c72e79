"""An episode's earlier turns rebuilt from their logged steps: what a resumed rollout continues from.

A logged step (a rollout record, kernel_gym.rollout.log, or an env's own log record) holds the response and the
step's `info`; together they carry all the next observation shows of a turn (its verdict line, summary, code and
feedback) and all the returns need (its score). `KernelRefineEnv.restore` puts such turns back into a reset env, so
the episode goes on at the next turn without evaluating, or asking the policy for, the turns already logged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.eval.result import EvalResult, Outcome, Timing

Step = tuple[str, dict[str, Any]]
"""(the response, the step's info) of one logged turn."""


def result_from_info(info: dict[str, Any]) -> EvalResult:
    """The EvalResult a step's `info` was made from (the fields the info keeps: no mismatch details)."""
    timing = None
    if info.get("runtime_ms") is not None and info.get("baseline_ms") is not None:
        timing = Timing(runtime_ms=float(info["runtime_ms"]), baseline_ms=float(info["baseline_ms"]),
                        **{"runtime_cv": 0.0, "baseline_cv": 0.0, "trials": 0, "method": "", **(info.get("timing") or {})})
    return EvalResult(outcome=Outcome(info["outcome"]), message=str(info.get("message") or ""),
                      backend=info.get("backend"), compiled=bool(info.get("compiled")), timing=timing,
                      hacks=tuple(info.get("hacks") or ()), hack_details=tuple(info.get("hack_details") or ()),
                      stage_ms=dict(info.get("stage_ms") or {}), signals=dict(info.get("signals") or {}),
                      worker_recycled=bool(info.get("worker_recycled")), infra_failure=bool(info.get("infra_failure")),
                      correctness=info.get("correctness"), isolation=dict(info.get("isolation") or {}))


def checked_steps(steps: Iterable[Step], *, task: str, max_turns: int) -> list[Step]:
    """The steps of turns 1..k of one episode of `task`, in order, with k < max_turns (a turn left to play); else
    ConfigError, naming what does not fit."""
    steps = list(steps)
    turns = [int(info.get("turn", 0)) for _, info in steps]
    if turns != list(range(1, len(steps) + 1)):
        raise ConfigError(f"logged steps must be turns 1..k in order, got turns {turns}")
    if len(steps) >= max_turns:
        raise ConfigError(f"{len(steps)} logged turns leave none to play (max_turns={max_turns})")
    tasks = {str(info.get("task")) for _, info in steps}
    if tasks - {task}:
        raise ConfigError(f"logged steps of task {sorted(tasks)} cannot continue an episode of {task}")
    missing = sorted({k for _, info in steps for k in ("outcome", "score", "feedback") if k not in info})
    if missing:
        raise ConfigError(f"logged steps lack {missing} (a log written before these keys existed)")
    return steps
