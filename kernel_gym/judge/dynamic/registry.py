"""The registry of the judge's dynamic checks: every anti-hack verdict the judge gives is raised by one of them.

A check is a function registered for one verdict at one stage of the job (`check(verdict, stage)`); its file is
named by its verdict (`judge/dynamic/<verdict>.py`), whose docstring's first line is the verdict's rule. `ORDER`
lists, per stage, the verdicts checked there in the order they run; the pipeline runs a stage's checks with
`run_stage` (at the stage's place in the job: after a load or a build, after every candidate call, at every
comparison of outputs, after the first call, in the correctness stage, after every timed round, after timing).
Checks see the job through `Context` (judge/dynamic/context.py), never the judge's state itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ORDER: dict[str, tuple[str, ...]] = {
    # after the candidate's runner loads the solution or builds ModelNew (its evidence)
    "build": ("background_thread", "harness_tampering"),
    # after every call of the candidate (its runner's evidence, and the judge's own look at the inputs and outputs)
    "call": ("background_thread", "harness_tampering", "lazy_output", "input_mutation", "precision_downcast"),
    # at every comparison of the candidate's outputs with the reference's
    "outputs": ("output_caching", "degenerate_output", "uninitialized_output"),
    "first_call": ("no_custom_kernel",),
    # the correctness stage, after the first call: the checks that call the runners themselves
    "correctness": ("input_specialization", "input_distribution", "torch_compute", "decoy_kernel", "library_time",
                    "shape_specialization", "output_caching", "no_custom_kernel"),
    "timed_call": ("output_caching",),  # after every timed round
    "after_timing": ("harness_tampering", "no_custom_kernel", "torch_compute"),
}
TIMED_STAGES = ("correctness",)  # each check's time lands in stage_ms["check_<verdict>"]
RETIRED = {"timer_tampering": "(retired: the clock is the judge's, out of the candidate's reach; kept so old logs "
                              "still read)"}
VERDICTS = tuple(dict.fromkeys(v for stage in ORDER.values() for v in stage))


class Hack(Exception):
    """A dynamic check fired: the named anti-hack verdict and what the policy is told."""

    def __init__(self, name: str, message: str):
        if name not in VERDICTS:
            raise ValueError(f"{name!r} is not a verdict of a registered check")
        super().__init__(message)
        self.name, self.message = name, message


class Stop(Exception):
    """Ends the job early with an ordinary outcome (a mismatch, a timeout, a crash...) and its result's fields."""

    def __init__(self, outcome: Any, message: str, **fields: Any):
        super().__init__(message)
        self.outcome, self.message, self.fields = outcome, message, fields


@dataclass(frozen=True)
class Check:
    verdict: str
    stage: str
    fn: Callable[[Any, Any], None]  # (context, what the stage saw) -> None, or raises Hack / Stop
    applies: Callable[[Any], bool]

    @property
    def rule(self) -> str:
        """What this check looks at: its docstring's first line."""
        return (self.fn.__doc__ or "").strip().splitlines()[0]


REGISTRY: dict[tuple[str, str], Check] = {}


def check(verdict: str, stage: str, *, applies: Callable[[Any], bool] = lambda ctx: True) -> Callable:
    """Register the decorated function as `verdict`'s check at `stage` (which ORDER must list)."""
    if verdict not in ORDER.get(stage, ()):
        raise ValueError(f"ORDER[{stage!r}] does not list {verdict!r}")

    def register(fn: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
        if (stage, verdict) in REGISTRY:
            raise ValueError(f"the {stage} check of {verdict!r} registered twice")
        REGISTRY[(stage, verdict)] = Check(verdict, stage, fn, applies)
        return fn

    return register


def run_stage(ctx: Any, stage: str, seen: Any = None) -> None:
    """The stage's checks in ORDER, each on what the stage saw (`seen`)."""
    for verdict in ORDER[stage]:
        c = REGISTRY[(stage, verdict)]
        if not c.applies(ctx):
            continue
        if stage in TIMED_STAGES:
            ctx.timed(f"check_{verdict}", lambda c=c: c.fn(ctx, seen))
        else:
            c.fn(ctx, seen)


def rule_of(verdict: str) -> str:
    """The verdict's rule: the first line of its file's docstring."""
    if verdict in RETIRED:
        return RETIRED[verdict]
    fn = next(c.fn for c in REGISTRY.values() if c.verdict == verdict)
    return (sys.modules[fn.__module__].__doc__ or "").strip().splitlines()[0]
