"""TritonRL's hierarchical reward: the plan (reasoning) tokens answer for speed, the code tokens for correctness.

    plan_reward = R_speedup = valid · clip(speedup, 0, 2)
    code_reward = R_correct = valid · 1{correct}
    S = α · plan_reward + code_reward                (α = 0.1; J = α·J_plan + J_code in the paper)

A policy-gradient trainer applies plan_reward to the plan tokens and code_reward to the code tokens; the env
gives it the split in `info["plan_code"]`: character spans of the response (the code span is the contents of
the last fenced block, the plan spans are everything else, so the two partition the response) and, when a
Hugging Face tokenizer is passed as `gym.make(..., tokenizer=tok)`, token spans of `tok(response)` too.
"""

from __future__ import annotations

import logging
from typing import Any

from kernel_gym.rewards.scores import Score, TurnSignals, register_factory
from kernel_gym.rewards.tritonrl import tritonrl_terms

logger = logging.getLogger(__name__)


@register_factory("plan_code")
def plan_code_score(alpha: float = 0.1, max_speedup: float = 2.0) -> Score:
    """S = α·plan_reward + code_reward with plan_reward = R_speedup, code_reward = R_correct (TritonRL, α = 0.1);
    0 when any hack fired."""

    def terms(t: TurnSignals) -> dict[str, float]:
        r = tritonrl_terms(t, max_speedup)
        return {**r, "plan_reward": r["R_speedup"], "code_reward": r["R_correct"]}

    def score(t: TurnSignals) -> float:
        if t.hacks:
            return 0.0
        r = terms(t)
        return alpha * r["plan_reward"] + r["code_reward"]

    score.__doc__ = (f"S = {alpha:g}*R_speedup (plan) + R_correct (code), where valid = syntax*func, "
                     f"R_correct = valid*1{{correct}}, R_speedup = valid*clip(speedup, 0, {max_speedup:g}); "
                     "0 when any hack fired.")
    score.terms = terms
    score.alpha = alpha
    return score


def char_spans(length: int, code_span: tuple[int, int] | list[int] | None) -> tuple[list[list[int]], list[list[int]]]:
    """(plan_spans, code_spans) as [start, end) character ranges that partition a response of `length` chars."""
    if code_span is None or code_span[1] <= code_span[0]:
        return ([[0, length]] if length else []), []
    start, end = int(code_span[0]), int(code_span[1])
    plan = [[s, e] for s, e in ((0, start), (end, length)) if e > s]
    return plan, [[start, end]]


def token_spans(offsets: list[tuple[int, int]], code_spans: list[list[int]]) -> tuple[list[list[int]], list[list[int]]]:
    """(plan, code) [start, end) token-index ranges: a token is code when its first character lies in a code span."""
    def is_code(offset: tuple[int, int]) -> bool:
        return any(s <= offset[0] < e for s, e in code_spans) and offset[1] > offset[0]

    plan: list[list[int]] = []
    code: list[list[int]] = []
    for i, offset in enumerate(offsets):
        runs = code if is_code(offset) else plan
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    return plan, code


def plan_code_info(score: Score, t: TurnSignals, response: str, code_span: tuple[int, int] | None,
                   tokenizer: Any = None) -> dict[str, Any] | None:
    """`info["plan_code"]` for a plan_code score (None for any other score)."""
    alpha = getattr(score, "alpha", None)
    if alpha is None or not isinstance(response, str):
        return None
    r = score.terms(t)  # a hack makes valid = 0, so both rewards are 0 as the score is
    plan, code = char_spans(len(response), code_span)
    info: dict[str, Any] = {"plan_spans": plan, "code_spans": code, "plan_reward": r["plan_reward"],
                            "code_reward": r["code_reward"], "alpha": alpha}
    if tokenizer is not None:
        try:
            offsets = [tuple(o) for o in tokenizer(response, return_offsets_mapping=True,
                                                   add_special_tokens=False)["offset_mapping"]]
        except (NotImplementedError, TypeError, KeyError, ValueError) as e:
            # slow (Python) tokenizers cannot give offsets: say so instead of guessing token spans
            info["token_error"] = f"{type(e).__name__}: {e}"
            logger.warning("plan_code: the tokenizer gave no offset mapping (%s); token spans left out", e)
        else:
            info["plan_token_spans"], info["code_token_spans"] = token_spans(offsets, code)
            info["num_tokens"] = len(offsets)
    return info
