"""The time limits of one job's requests: loading and constructing (`SETUP_LIMIT_S`), each call (it follows the
reference's call time), all checks and timing together (`run_timeout_s`); compiling is not counted in any of them
(the compile budget's: judge/budget.py). And the sentence that says which limit a request ran into."""

from __future__ import annotations

import time
from typing import Any

from kernel_gym.judge.budget import SETUP_LIMIT_S, Budget


class Limits:
    def __init__(self, cfg: Any, device: Any, budget: Budget):
        self.cfg, self.device, self.budget = cfg, device, budget
        self.ref_ms: float | None = None  # the reference's call time (host), once known: the call limit follows it

    def call_limit(self) -> tuple[float, str]:
        """The limit of one call, the first included (seconds, compiling not counted), and how it was set: never
        more than `run_timeout_s`."""
        limit, run = self.cfg.call_timeout_s, self.cfg.run_timeout_s
        if limit is not None:
            text = f"{limit:g} s (call_timeout_s)"
        elif self.ref_ms is None:
            limit, text = run, f"{run:g} s"
        elif self.device.type == "cuda":
            limit = max(2.0, 50 * self.ref_ms / 1e3)
            text = f"{limit:.3g} s (max(2 s, 50x the reference's {self.ref_ms:.3g} ms per call))"
        else:
            limit = max(30.0, 1000 * self.ref_ms / 1e3)
            text = f"{limit:.3g} s (max(30 s, 1000x the reference's {self.ref_ms:.3g} ms per call))"
        if limit > run:
            return run, f"{run:g} s (run_timeout_s)"
        return limit, text

    def deadline(self, stage: str) -> float:
        """The run limit of a request that is not a call: loading and constructing (`SETUP_LIMIT_S`), then the
        call limit within the job's run limit. Compile segments in between are under the compile budget."""
        if stage in ("compile", "first_call"):
            return time.monotonic() + SETUP_LIMIT_S
        return min(time.monotonic() + self.call_limit()[0], self.budget.run_deadline)

    def setup_deadline(self) -> float:
        """Loading a module or constructing a model (at any stage: the second shape's too): `SETUP_LIMIT_S`."""
        return min(time.monotonic() + SETUP_LIMIT_S, self.budget.run_deadline)

    def call_deadline(self) -> float:
        """The run limit of one call, the first included: it follows the reference's call time (max(2 s, 50x) on
        cuda, max(30 s, 1000x) on cpu, where interpreted Triton is slow), within the job's run limit."""
        return min(time.monotonic() + self.call_limit()[0], self.budget.run_deadline)

    def timeout_text(self, what: str, stage: str) -> str:
        """Which limit a request ran into (`what`: "compile", "call", or another request's name)."""
        if what == "compile":
            return (f"the compile budget of {self.cfg.compile_timeout_s:g} s (compile_timeout_s: all of the job's "
                    "compiling together)")
        if time.monotonic() >= self.budget.run_deadline - 0.5:
            return f"{self.cfg.run_timeout_s:g} s (run_timeout_s: all checks and timing together)"
        if what in ("call", "timed_call") or stage not in ("compile", "first_call"):
            return self.call_limit()[1] + " for one call, compiling not counted"
        return f"{SETUP_LIMIT_S:g} s for loading or constructing the model, compiling not counted"
