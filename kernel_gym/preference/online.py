"""The ranker and the LLM reviewer inside the env: after a turn is evaluated, each configured model rates the kernel.

Both rate correct kernels only (a wrong or hacked kernel is already decided by the evaluation, and a model's
opinion must never make a wrong answer pay). What they add to a turn (the reviewer's keys keep the name `judge`,
its config keyword's, which logs and scores use):
- `info["signals"]["ranker"]`, `info["signals"]["judge"]` (in [0, 1]) and `info["signals"]["judge_genuine"]` (1/0)
  when there is a value — the `linear` score's `ranker`, `judge` and `judge_genuine` terms read them (a term with
  no value counts 0, like any signal that was not measured);
- `info["ranker"]` and `info["judge"]`: the value (None for no signal) and a note saying why there is none;
- `info["review_flags"]`: `["judge_not_genuine"]` when the reviewer calls a correct kernel a wrapper, decoy or hack.
  A review flag is for a human or a later audit; it is not a hack verdict and changes no score by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernel_gym.preference.llm_review import LLMReviewer, make_reviewer
from kernel_gym.preference.ranker import Ranker, RankerInput, load_ranker

NOT_RATED = "not rated: only correct kernels are rated"


class Critics:
    """The configured ranker and LLM reviewer (either may be None)."""

    def __init__(self, ranker: Any = None, reviewer: Any = None):
        self.ranker: Ranker | None = None if ranker is None else load_ranker(ranker)
        self.reviewer: LLMReviewer | None = make_reviewer(reviewer)
        self._owns_reviewer = not isinstance(reviewer, LLMReviewer)  # one passed in may serve other envs too

    @classmethod
    def from_config(cls, ranker: Any, reviewer: Any) -> Critics | None:
        """None when neither is configured (the env then does nothing extra); `reviewer`: EnvConfig.judge."""
        critics = cls(ranker, reviewer)
        return critics if (critics.ranker or critics.reviewer) else None

    def assess(self, task: Any, code: str | None, response: str, result: Any, earlier: Sequence[Any], *,
               checks: str = "standard") -> tuple[dict[str, float], dict[str, Any]]:
        """(signals to add, info entries) for one evaluated turn; `earlier` are the episode's previous turns
        (objects with `.parsed.code` and `.result`)."""
        correct = bool(result.correct and not result.hacks and code)
        signals: dict[str, float] = {}
        info: dict[str, Any] = {}
        if self.ranker is not None:
            entry: dict[str, Any] = {"score": None, "mode": self.ranker.mode, "note": NOT_RATED}
            if correct:
                candidate = _input(task, code, response, result, turn=len(earlier) + 1)
                anchor, anchor_name = _anchor(task, earlier) if self.ranker.mode == "pairwise" else (None, None)
                value, note = self.ranker.rate(candidate, anchor)
                entry = {"score": value, "mode": self.ranker.mode, "note": note}
                if anchor_name:
                    entry["anchor"] = anchor_name
                if value is not None:
                    signals["ranker"] = value
            info["ranker"] = entry
        if self.reviewer is not None:
            flags: list[str] = []
            if correct:
                verdict = self.reviewer.review(task.id, task.source, code,
                                              allowed_library=checks in ("standard", "permissive"))
                if verdict.score is not None:
                    signals["judge"] = verdict.score
                    signals["judge_genuine"] = 1.0 if verdict.genuine else 0.0
                if verdict.genuine is False:
                    flags.append("judge_not_genuine")
                info["judge"] = verdict.info()
            else:
                info["judge"] = {"score": None, "note": NOT_RATED}
            info["review_flags"] = flags
        return signals, info

    def close(self) -> None:
        if self.reviewer is not None and self._owns_reviewer:
            self.reviewer.close()


def _input(task: Any, code: str, response: str, result: Any, turn: int) -> RankerInput:
    return RankerInput(task=task.id, code=code, reference=task.source, response=response,
                       correct=bool(result.correct and not result.hacks), speedup=result.speedup,
                       signals=dict(result.signals), turn=turn)


def _anchor(task: Any, earlier: Sequence[Any]) -> tuple[RankerInput, str]:
    """The episode's best earlier correct kernel (highest speedup), else the reference program."""
    best = None
    for i, t in enumerate(earlier, start=1):
        r = t.result
        if r.correct and not r.hacks and t.parsed.code and (best is None or (r.speedup or 0) > (best[1].speedup or 0)):
            best = (i, r, t)
    if best is None:
        return RankerInput(task=task.id, code=task.source, reference=task.source, speedup=1.0), "reference"
    i, r, t = best
    return _input(task, t.parsed.code, "", r, turn=i), f"turn {i}"
