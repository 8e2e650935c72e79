"""Typed results of one evaluation: an outcome and named optional fields, no sentinels."""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field
from typing import Any


class Outcome(str, enum.Enum):
    """How far a candidate got through the pipeline (each is also `info["error"]`, except CORRECT)."""

    FORMAT_ERROR = "format_error"  # no usable code block in the response
    REJECTED = "rejected"  # an anti-hack check fired
    COMPILE_ERROR = "compile_error"  # import, load_inline or Triton JIT failed
    RUNTIME_ERROR = "runtime_error"  # an exception while running the candidate
    TIMEOUT = "timeout"  # a stage ran past its time limit
    CRASH = "crash"  # the worker process died or its CUDA context was poisoned
    OOM = "oom"  # out of device or host memory
    MISMATCH = "mismatch"  # ran, but outputs differ from the reference
    UNSUPPORTED = "unsupported"  # cannot run on this device (e.g. CUDA code on the CPU backend)
    CORRECT = "correct"


@dataclass(frozen=True)
class Mismatch:
    """Where and by how much the candidate's outputs differ from the reference's."""

    max_abs_err: float | None = None
    max_rel_err: float | None = None
    where: str | None = None  # e.g. "output 0 at index (3, 17): got 1.5, expected 2.0"
    n_bad: int | None = None
    n_total: int | None = None
    kind: str = "value"  # "value", "structure" (count/shape/dtype/device), "nan" (NaN where the reference is finite), "degenerate", "downcast" (the precision_downcast check's)
    rule: str = "fixed"  # what decided: "fixed" (atol/rtol), "oracle" (the error budget), "derived" (budget, no oracle)


@dataclass(frozen=True)
class Timing:
    """Medians and spread of the timed runs; both sides measured by the same method in one worker."""

    runtime_ms: float
    baseline_ms: float
    runtime_cv: float
    baseline_cv: float
    trials: int
    method: str  # the judge's clock: "judge_cuda_events+gate", "judge_cuda_events+device_sync", "judge_wall_clock"
    speedup_rel_se: float = 0.0  # estimated relative standard error of the speedup (from both medians' MADs)
    gate_ms: float = 0.0  # median launch gate before each timed call (cuda; 0: none)
    resolution_ms: float = 0.0  # the clock's resolution: no reading is below it (0: not reported)

    @property
    def speedup(self) -> float:
        return self.baseline_ms / self.runtime_ms if self.runtime_ms > 0 else float("inf")


@dataclass(frozen=True)
class EvalResult:
    """What the sandbox says about one candidate."""

    outcome: Outcome
    message: str = ""  # readable detail for the agent (trimmed compile log, exception, ...)
    backend: str | None = None
    compiled: bool = False
    timing: Timing | None = None
    mismatch: Mismatch | None = None
    hacks: tuple[str, ...] = ()
    hack_details: tuple[str, ...] = ()  # one explanation per hack, same order
    stage_ms: dict[str, float] = field(default_factory=dict)
    signals: dict[str, float] = field(default_factory=dict)
    worker_recycled: bool = False
    # The evaluation infrastructure failed (the judge, its runners' start, the service, a Ray actor), not the solution:
    # the outcome (CRASH) says nothing about the kernel. Training code should drop or retry such a turn.
    infra_failure: bool = False
    # How correctness was judged (judge/oracle.py): the rule ("oracle", "mixed", "fixed"), k, the floor, the worst
    # output's candidate and reference errors against the float64 oracle, their ratio and the limit. None: not judged.
    correctness: dict[str, Any] | None = None
    # What confined the job's candidate runner, as the judge saw it (kernel_gym.sandbox.isolation.for_job): its uid,
    # capabilities, no_new_privs, seccomp, namespaces, the reference runner's uid; {} when no runner ran.
    isolation: dict[str, Any] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.outcome is Outcome.CORRECT

    @property
    def speedup(self) -> float | None:
        return self.timing.speedup if (self.timing and self.correct) else None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (strict: a float that is not finite, which the judge never reports in a timing, is
        written as null, so one odd value cannot make a batch's response unencodable)."""
        d = _finite(dataclasses.asdict(self))
        d["outcome"] = self.outcome.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalResult:
        d = dict(d)
        d["outcome"] = Outcome(d["outcome"])
        d["timing"] = Timing(**d["timing"]) if d.get("timing") else None
        d["mismatch"] = Mismatch(**d["mismatch"]) if d.get("mismatch") else None
        d["hacks"] = tuple(d.get("hacks", ()))
        d["hack_details"] = tuple(d.get("hack_details", ()))
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def replace(self, **changes: Any) -> EvalResult:
        return dataclasses.replace(self, **changes)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_finite(v) for v in value)
    return value
