"""TritonRL's gated reward: nothing counts unless the code is valid Triton that really does the work.

    syntax    = 1{format_ok and compiled}
    func      = 1{no anti-hack check fired}          (the paper's functionality / no-cheating check)
    valid     = syntax · func
    R_correct = valid · 1{correct}
    R_speedup = valid · clip(speedup, 0, 2)            (speedup is 0 unless correct)
    S         = a · R_correct + b · R_speedup          (a = b = 1 by default)
"""

from __future__ import annotations

from kernel_gym.rewards.scores import Score, TurnSignals, indicator, register_factory


def tritonrl_terms(t: TurnSignals, max_speedup: float = 2.0) -> dict[str, float]:
    """syntax, func, valid, R_correct and R_speedup for one turn."""
    syntax = indicator(t.format_ok and t.compiled)
    func = indicator(not t.hacks)
    valid = syntax * func
    speedup = (t.speedup or 0.0) if t.correct else 0.0
    return {"syntax": syntax, "func": func, "valid": valid, "R_correct": valid * indicator(t.correct),
            "R_speedup": valid * min(max(speedup, 0.0), max_speedup)}


@register_factory("tritonrl")
def tritonrl_score(correct_weight: float = 1.0, speedup_weight: float = 1.0, max_speedup: float = 2.0) -> Score:
    """S = R_correct + R_speedup with valid = syntax·func, R_correct = valid·correct,
    R_speedup = valid·clip(speedup, 0, 2) (TritonRL); 0 when any hack fired."""

    def terms(t: TurnSignals) -> dict[str, float]:
        return tritonrl_terms(t, max_speedup)

    def score(t: TurnSignals) -> float:
        if t.hacks:
            return 0.0
        r = terms(t)
        return correct_weight * r["R_correct"] + speedup_weight * r["R_speedup"]

    score.__doc__ = (f"S = {correct_weight:g}*R_correct + {speedup_weight:g}*R_speedup, where valid = syntax*func, "
                     f"R_correct = valid*1{{correct}}, R_speedup = valid*clip(speedup, 0, {max_speedup:g}); "
                     "0 when any hack fired.")
    score.terms = terms
    return score
