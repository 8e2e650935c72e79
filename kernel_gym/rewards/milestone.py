"""CUDA Agent's milestone score: a few levels of achievement instead of a continuous speedup.

    S = 0  if the turn fails (format, compile, run, mismatch, or any hack)
    S = 1  if correct
    S = 2  if correct and faster than the baseline (speedup > 1)
"""

from __future__ import annotations

from kernel_gym.rewards.scores import Score, TurnSignals, indicator, register_factory


@register_factory("milestone")
def milestone_score(faster_than: float = 1.0) -> Score:
    """S = 0 on failure, 1 when correct, 2 when correct and speedup > 1 (CUDA Agent); 0 when any hack fired."""

    def faster(t: TurnSignals) -> bool:
        return t.correct and t.speedup is not None and t.speedup > faster_than

    def score(t: TurnSignals) -> float:
        if t.hacks or not t.correct:
            return 0.0
        return 2.0 if faster(t) else 1.0

    def terms(t: TurnSignals) -> dict[str, float]:
        return {"correct": indicator(t.correct), "faster": indicator(faster(t))}

    score.__doc__ = (f"S = 0 when the turn fails, 1 when correct, 2 when correct and speedup > {faster_than:g}; "
                     "0 when any hack fired.")
    score.terms = terms
    return score
