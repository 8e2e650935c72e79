"""Configurations "KxT" (K trajectories of T turns per task) and task lists."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kernel_gym.errors import ConfigError

DEFAULT_CONFIGS = "128x1,32x4,16x8"
"""Kevin's comparison at 128 attempts per task: parallel sampling, then more and more serial refinement."""

_LABEL = re.compile(r"^\s*(\d+)\s*[x×*]\s*(\d+)\s*$")


@dataclass(frozen=True)
class Budget:
    """K trajectories of T turns for every task: K·T attempts per task."""

    trajectories: int
    turns: int

    @property
    def label(self) -> str:
        return f"{self.trajectories}x{self.turns}"

    @property
    def attempts(self) -> int:
        return self.trajectories * self.turns


def unequal_budgets(budgets: Sequence[Budget]) -> str | None:
    """A warning when the configurations do not spend the same attempts per task (K·T), else None: a comparison
    "at equal budget" needs equal budgets (or reading the curves at a common budget)."""
    if len({b.attempts for b in budgets}) <= 1:
        return None
    shown = ", ".join(f"{b.label} = {b.attempts}" for b in budgets)
    return (f"unequal budgets (attempts per task: {shown}): compare the configurations at a common budget "
            "(the report's serial_vs_parallel.png), not by their final numbers")


def parse_budgets(spec: str | Sequence[str | Budget | tuple[int, int]]) -> list[Budget]:
    """"128x1,32x4,16x8" (or a list of labels, Budgets or (K, T) pairs) -> Budgets, duplicates dropped."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[Budget] = []
    for item in items:
        if isinstance(item, Budget):
            budget = item
        elif isinstance(item, tuple):
            budget = Budget(int(item[0]), int(item[1]))
        else:
            m = _LABEL.match(str(item))
            if not m:
                raise ConfigError(f"a configuration is KxT (trajectories x turns), e.g. 32x4; got {item!r}")
            budget = Budget(int(m.group(1)), int(m.group(2)))
        if budget.trajectories < 1 or budget.turns < 1:
            raise ConfigError(f"a configuration needs at least 1 trajectory and 1 turn; got {budget.label}")
        if budget not in out:
            out.append(budget)
    if not out:
        raise ConfigError("no configuration given (e.g. '128x1,32x4,16x8')")
    return out


def resolve_tasks(spec: str | Sequence[str]) -> list[str]:
    """Task ids from "level1/relu,level1/softmax", a suite ("level1", "suite:level2"), "all", paths, or a list of
    any of these; each is checked now (an unknown id raises UnknownTaskError with close matches)."""
    from kernel_gym.tasks import list_suites, list_tasks, load_task

    items = [s for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        name = item.removeprefix("suite:")
        if item == "all":
            found = list_tasks()
        elif item.startswith("suite:") or name in list_suites():
            found = list_tasks(name)
            if not found:
                raise ConfigError(f"the suite {name!r} has no tasks")
        else:
            found = [load_task(item).id]
        out.extend(t for t in found if t not in out)
    if not out:
        raise ConfigError("no task given")
    return out
