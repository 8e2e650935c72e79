"""A weighted sum of named signals (the verifiers-style rubric; AutoTriton's correctness-plus-rule reward).

    S = Σ_k w_k · v_k

Each value v_k is read by name: `correct`, `compiled`, `format_ok` (1 or 0), `speedup` (0 unless correct),
`difficulty`, `response_chars`, `plan_chars`, `code_chars`, or any entry of `TurnSignals.signals` (structural
and profiler signals, 0 when the backend did not measure it; `ranker`, `judge` and `judge_genuine` when the env has
a ranker or judge, 0 when it gave no signal — docs/preference.md). A term of weight 0 is logged, not rewarded: every
named term's raw value appears in `info["reward_terms"]`. Any hack flag gives S = 0.
"""

from __future__ import annotations

from collections.abc import Mapping

from kernel_gym.errors import ConfigError
from kernel_gym.rewards.scores import Score, TurnSignals, indicator, register_factory

KEVIN_WEIGHTS = {"correct": 0.3, "speedup": 1.0}
_FIELDS = ("difficulty", "response_chars", "plan_chars", "code_chars")


def signal_value(t: TurnSignals, name: str) -> float:
    """The value of one named signal for this turn (see the module docstring for the names)."""
    if name in ("correct", "compiled", "format_ok"):
        return indicator(getattr(t, name))
    if name == "speedup":
        return float(t.speedup or 0.0) if t.correct else 0.0
    if name in _FIELDS:
        return float(getattr(t, name))
    return float(t.signals.get(name, 0.0))


@register_factory("linear")
def linear_score(weights: Mapping[str, float] | None = None) -> Score:
    """S = Σ_k w_k · v_k over named signals (default w = {correct: 0.3, speedup: 1}, i.e. Kevin's score);
    0 when any hack fired."""
    weights = dict(KEVIN_WEIGHTS if weights is None else weights)
    if not weights:
        raise ConfigError("linear score needs at least one weight, e.g. {'correct': 1.0}")
    for name, w in weights.items():
        if isinstance(w, bool) or not isinstance(w, (int, float)):
            raise ConfigError(f"linear score weight {name!r} must be a number, got {w!r}")

    def terms(t: TurnSignals) -> dict[str, float]:
        return {name: signal_value(t, name) for name in weights}

    def score(t: TurnSignals) -> float:
        if t.hacks:
            return 0.0
        values = terms(t)
        return float(sum(w * values[name] for name, w in weights.items()))

    shown = " + ".join(f"{w:g}*{name}" for name, w in weights.items())
    score.__doc__ = f"S = {shown}; 0 when any hack fired."
    score.terms = terms
    score.weights = dict(weights)
    return score
