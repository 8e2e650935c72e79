"""Trajectory logs -> candidates: every logged response with the measurements a preference needs.

Reads env step logs (`log_dir`, kernel_gym.trajectory) and rollout logs (`rollout.jsonl`, kernel_gym.rollout.log):
both hold one record per step with `task`, `turn`, `action`, `prompt` (the observation answered; older logs lack it
and the previous step's observation stands in) and the step's `info`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_gym.samples import episodes

CORRECT, INCORRECT, HACKED = "correct", "incorrect", "hacked"


@dataclass(frozen=True)
class Candidate:
    """One logged response to a task, as the pair rules see it."""

    task: str
    response: str
    """The whole response (reasoning and code): what `chosen`/`rejected` hold."""
    code: str
    """Its code block (the whole response when the log has no code span)."""
    prompt: str | None
    """The observation the response answered; None when the log has neither it nor the previous observation."""
    correct: bool
    hacks: tuple[str, ...] = ()
    error: str | None = None
    speedup: float | None = None
    runtime_ms: float | None = None
    baseline_ms: float | None = None
    runtime_cv: float | None = None
    baseline_cv: float | None = None
    signals: dict[str, float] = field(default_factory=dict)
    device: str = ""
    turn: int = 1
    episode_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    """Other evidence worth carrying (the LLM reviewer's `judge` entry, review flags, reward terms), as logged."""

    @property
    def tier(self) -> str:
        """`hacked` (an anti-hack check fired), `correct`, or `incorrect` (any other failure)."""
        if self.hacks:
            return HACKED
        return CORRECT if self.correct else INCORRECT

    @property
    def code_hash(self) -> str:
        """Hash of the code with trailing whitespace ignored: identical kernels share it."""
        text = "\n".join(line.rstrip() for line in self.code.strip().splitlines())
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def evidence(self) -> dict[str, Any]:
        """What a pair record carries about this candidate."""
        return {"correct": self.correct, "tier": self.tier, "hacks": list(self.hacks), "error": self.error,
                "speedup": self.speedup, "runtime_ms": self.runtime_ms, "baseline_ms": self.baseline_ms,
                "runtime_cv": self.runtime_cv, "baseline_cv": self.baseline_cv, "signals": dict(self.signals),
                "device": self.device, "turn": self.turn, "episode_id": self.episode_id,
                "code_sha256": self.code_hash, **self.extra}


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _code(action: str, info: dict[str, Any]) -> str:
    span = info.get("code_span")
    if isinstance(span, (list, tuple)) and len(span) == 2 and all(isinstance(i, int) for i in span):
        return action[span[0]:span[1]]
    return action


EXTRA_KEYS = ("judge", "ranker", "review_flags", "reward_terms", "score")


def candidate_from_record(record: dict[str, Any], prompt: str | None) -> Candidate:
    """A candidate from one step record (its `info` as the env wrote it)."""
    info = record["info"]
    action = record.get("action")
    action = action if isinstance(action, str) else ""
    timing = info.get("timing") if isinstance(info.get("timing"), dict) else {}
    signals = {str(k): float(v) for k, v in (info.get("signals") or {}).items() if _num(v) is not None}
    return Candidate(
        task=str(record.get("task") or info.get("task")), response=action, code=_code(action, info), prompt=prompt,
        correct=bool(info.get("correct")) and not info.get("hacks"), hacks=tuple(info.get("hacks") or ()),
        error=info.get("error"), speedup=_num(info.get("speedup")), runtime_ms=_num(info.get("runtime_ms")),
        baseline_ms=_num(info.get("baseline_ms")), runtime_cv=_num(timing.get("runtime_cv")),
        baseline_cv=_num(timing.get("baseline_cv")), signals=signals, device=str(info.get("device") or ""),
        turn=int(record.get("turn") or info.get("turn") or 1), episode_id=str(record.get("episode_id") or ""),
        extra={k: info[k] for k in EXTRA_KEYS if info.get(k) is not None})


def read_candidates(paths: Iterable[str | Path]) -> list[Candidate]:
    """Every logged response in the logs (files, or folders searched for *.jsonl), in log order."""
    out = []
    for episode in episodes(paths):
        previous: dict[str, Any] | None = None
        for record in episode.records:
            prompt = record.get("prompt")
            if prompt is None and previous is not None and int(previous["turn"]) == int(record["turn"]) - 1:
                prompt = previous.get("observation")  # older logs: what the step before showed
            out.append(candidate_from_record(record, prompt if isinstance(prompt, str) else None))
            previous = record
    return out
