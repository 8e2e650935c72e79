"""The score registry: a turn's outcome -> a number. Each entry's docstring is its formula."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Union

from kernel_gym.errors import UnknownScoreError


@dataclass(frozen=True)
class TurnSignals:
    """What a score may look at for one turn, all computed by the env from the same evaluation."""

    format_ok: bool
    compiled: bool
    correct: bool
    speedup: float | None
    hacks: tuple[str, ...] = ()
    response_chars: int = 0
    signals: dict[str, float] = field(default_factory=dict)


Score = Callable[[TurnSignals], float]
ScoreLike = Union[str, Score]
_REGISTRY: dict[str, Score] = {}


def register_score(name: str) -> Callable[[Score], Score]:
    """Decorator: add a score under `name` (its docstring should state the formula)."""

    def add(fn: Score) -> Score:
        _REGISTRY[name] = fn
        return fn

    return add


def list_scores() -> list[str]:
    return sorted(_REGISTRY)


def get_score(name: ScoreLike) -> Score:
    """A registered score by name, or a callable passed through unchanged."""
    if callable(name):
        return name
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownScoreError("score", name, list(_REGISTRY)) from None


def kevin_score(correctness_weight: float = 0.3) -> Score:
    """S = w * 1{correct} + 1{correct} * speedup (Kevin; w = 0.3). Any hack flag gives 0."""

    def score(t: TurnSignals) -> float:
        if t.hacks or not t.correct:
            return 0.0
        return correctness_weight + (t.speedup or 0.0)

    score.__doc__ = f"S = {correctness_weight:g}*1{{correct}} + 1{{correct}}*speedup; 0 when any hack fired."
    return score


register_score("kevin")(kevin_score(0.3))


@register_score("correctness")
def correctness(t: TurnSignals) -> float:
    """S = 1{correct}; 0 when any hack fired."""
    return 1.0 if (t.correct and not t.hacks) else 0.0
