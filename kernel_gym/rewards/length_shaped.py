"""Composer 2's length shaping, composable with any score: a concave penalty on the response's length, scaled by
the task's difficulty, that never takes a score below 0.

    L       = response_chars / ref_chars
    f(L)    = sqrt(L)   (shape="sqrt", default)   or   log1p(L)   (shape="log1p")
    penalty = λ · difficulty^p · f(L)                 (λ = 0.05, ref_chars = 4000, p = 1)
    S       = base − min(penalty, max(base, 0))

The penalty only removes what the base score gave: a correct answer's score ends at 0 at worst (never below),
a failed turn's 0 stays 0 (so a short wrong answer is not preferred to a long wrong one: no push to collapse the
reasoning, which Kevin saw with a plain length penalty), and a negative base stays as it was. f is concave, so
the first thousands of characters cost the most per character and long reasoning is not punished linearly.
`p` sets how difficulty scales the penalty (p = −1 lets harder tasks think longer for the same cost).
"""

from __future__ import annotations

import math
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.rewards.scores import Score, ScoreLike, TurnSignals, get_score, register_factory, score_terms

SHAPES = {"sqrt": math.sqrt, "log1p": math.log1p}


def task_difficulty(metadata: dict[str, Any], level: int | None) -> float:
    """KERNEL_GYM["difficulty"] when the task sets it, else its level (1, 2, 3, ...), else 1."""
    value = metadata.get("difficulty", level if level is not None else 1)
    try:
        return float(value)
    except (TypeError, ValueError):
        return 1.0


@register_factory("length_shaped")
def length_shaped(base: ScoreLike = "kevin", lam: float = 0.05, ref_chars: float = 4000.0, shape: str = "sqrt",
                  difficulty_power: float = 1.0) -> Score:
    """S = base − min(λ·difficulty^p·f(chars/ref), max(base, 0)), f = sqrt (Composer 2); base = kevin by default;
    0 when any hack fired."""
    if shape not in SHAPES:
        raise ConfigError(f"length_shaped shape must be one of {sorted(SHAPES)}, got {shape!r}")
    if lam < 0 or ref_chars <= 0:
        raise ConfigError(f"length_shaped needs lam >= 0 and ref_chars > 0, got lam={lam}, ref_chars={ref_chars}")
    base_fn, f = get_score(base), SHAPES[shape]

    def penalty(t: TurnSignals) -> float:
        scale = t.difficulty**difficulty_power if t.difficulty > 0 else 0.0  # a task of difficulty 0 is never shaped
        return lam * scale * f(max(t.response_chars, 0) / ref_chars)

    def score(t: TurnSignals) -> float:
        if t.hacks:
            return 0.0
        b = float(base_fn(t))
        return b - min(penalty(t), max(b, 0.0))

    def terms(t: TurnSignals) -> dict[str, float]:
        return {**score_terms(base_fn, t), "base": float(base_fn(t)), "length_penalty": penalty(t)}

    first = ((getattr(base_fn, "__doc__", None) or "base").strip().splitlines() or ["base"])[0]
    score.__doc__ = (f"S = base - min({lam:g}*difficulty^{difficulty_power:g}*{shape}(response_chars/{ref_chars:g}), "
                     f"max(base, 0)); base: {first}")
    score.terms = terms
    return score
