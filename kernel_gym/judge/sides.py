"""The two sides of a judged job (the candidate's runner and the reference's, each with its shared buffers) and
what one call of either gave the judge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel_gym.eval.result import Mismatch
from kernel_gym.sandbox.shared import Arena


@dataclass
class Call:
    """What the judge knows after one call: the outputs it snapshotted and the runner's evidence."""

    outputs: list[Any]
    evidence: dict[str, Any]
    sample: Any = None
    mismatch: Mismatch | None = None  # a structural difference already found (count, shape, dtype, device)


@dataclass
class Side:
    """One runner and its shared buffers for this job."""

    runner: Any  # judge/runners.py RunnerProcess
    name: str  # "candidate" | "reference"
    slots: dict[str, Arena] = field(default_factory=dict)

    def close(self) -> None:
        for arena in self.slots.values():
            arena.close()
        self.slots.clear()
