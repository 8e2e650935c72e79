"""The score registry: a turn's outcome -> a number. Each entry's docstring is its formula.

A score is any callable `TurnSignals -> float`. A registered score may also be built with parameters: its
factory is registered beside it (`register_factory`), and `get_score({"name": "kevin", "correctness_weight": 0.5})`
calls `kevin_score(correctness_weight=0.5)`. A score may expose the named terms behind its value as a
`terms(signals) -> dict[str, float]` attribute; the env reports them in `info["reward_terms"]`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kernel_gym.errors import ConfigError, UnknownScoreError


@dataclass(frozen=True)
class TurnSignals:
    """What a score may look at for one turn, all computed by the env from the same evaluation."""

    format_ok: bool
    """The response had a usable code block (parse_action succeeded)."""
    compiled: bool
    """The candidate imported and ran its first call."""
    correct: bool
    """Outputs matched the reference and no anti-hack check fired."""
    speedup: float | None
    """baseline_ms / runtime_ms, set only when correct."""
    hacks: tuple[str, ...] = ()
    """Names of the anti-hack checks that fired; non-empty means the score is 0 in every design."""
    response_chars: int = 0
    """Length of the whole response."""
    signals: dict[str, float] = field(default_factory=dict)
    """Named numbers from the evaluation (structural and profiler signals, when the backend measures them)."""
    plan_chars: int = 0
    """Characters of the response outside the code block (reasoning, fences, trailing text)."""
    code_chars: int = 0
    """Characters of the code block's contents."""
    difficulty: float = 1.0
    """The task's difficulty: KERNEL_GYM["difficulty"] when the task sets it, else its level, else 1."""


Score = Callable[[TurnSignals], float]
ScoreLike = str | Mapping[str, Any] | Score
_REGISTRY: dict[str, Score] = {}
_FACTORIES: dict[str, Callable[..., Score]] = {}


def register_score(name: str) -> Callable[[Score], Score]:
    """Decorator: add a score under `name` (its docstring should state the formula)."""

    def add(fn: Score) -> Score:
        _REGISTRY[name] = fn
        return fn

    return add


def register_factory(name: str) -> Callable[[Callable[..., Score]], Callable[..., Score]]:
    """Decorator on a factory `(**params) -> Score`: registers `factory()` under `name`, and the factory for
    parametrised lookups (`get_score({"name": name, **params})`)."""

    def add(factory: Callable[..., Score]) -> Callable[..., Score]:
        _FACTORIES[name] = factory
        _REGISTRY[name] = factory()
        return factory

    return add


def list_scores() -> list[str]:
    return sorted(_REGISTRY)


def get_score(spec: ScoreLike) -> Score:
    """A score from a registered name, a dict `{"name": ..., **params}`, or a callable passed through unchanged."""
    if callable(spec):
        return spec
    if isinstance(spec, Mapping):
        return _build(spec)
    if isinstance(spec, str):
        try:
            return _REGISTRY[spec]
        except KeyError:
            raise UnknownScoreError("score", spec, list(_REGISTRY)) from None
    raise ConfigError(f"score must be a name, a dict with a 'name' key, or a callable; got {type(spec).__name__}")


def _build(spec: Mapping[str, Any]) -> Score:
    params = dict(spec)
    name = params.pop("name", None)
    if not isinstance(name, str):
        raise ConfigError(f"a score given as a dict needs a 'name' key (a registered score), got {dict(spec)!r}")
    base = get_score(name)  # raises UnknownScoreError with a hint
    if not params:
        return base
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ConfigError(f"score {name!r} takes no parameters, got {sorted(params)}")
    accepted = list(inspect.signature(factory).parameters)
    try:
        inspect.signature(factory).bind(**params)
    except TypeError:
        raise ConfigError(f"score {name!r} accepts {accepted}, got {sorted(params)}") from None
    return factory(**params)


def score_terms(score: Score, t: TurnSignals) -> dict[str, float]:
    """The named terms behind a score's value (what `info["reward_terms"]` shows); {} for a plain callable."""
    terms = getattr(score, "terms", None)
    return {k: float(v) for k, v in terms(t).items()} if callable(terms) else {}


def indicator(flag: bool) -> float:
    return 1.0 if flag else 0.0


@register_factory("kevin")
def kevin_score(correctness_weight: float = 0.3) -> Score:
    """S = w * 1{correct} + 1{correct} * speedup (Kevin; w = 0.3). Any hack flag gives 0."""

    def score(t: TurnSignals) -> float:
        if t.hacks or not t.correct:
            return 0.0
        return correctness_weight + (t.speedup or 0.0)

    def terms(t: TurnSignals) -> dict[str, float]:
        return {"correct": indicator(t.correct), "speedup": t.speedup or 0.0}

    score.__doc__ = f"S = {correctness_weight:g}*1{{correct}} + 1{{correct}}*speedup; 0 when any hack fired."
    score.terms = terms
    return score


@register_score("correctness")
def correctness(t: TurnSignals) -> float:
    """S = 1{correct}; 0 when any hack fired."""
    return 1.0 if (t.correct and not t.hacks) else 0.0


correctness.terms = lambda t: {"correct": indicator(t.correct)}
