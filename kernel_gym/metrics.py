"""Agent-evaluation metrics over trajectories: correctness, mean speedup, fast_p, best@k, per-turn curves, hack,
format-error and Not-Okay rates. Pure functions of `Trajectory` values; docs/rollouts.md states every convention.

Conventions (the value of an attempt is its speedup when correct, else 0):
- `mean_speedup` (Kevin): per task the best value among its attempts within the budget (0 when none is correct),
  averaged over tasks (arithmetic mean).
- `fast_p` (KernelBench): the fraction of tasks with an attempt that is correct AND has speedup > p; `fast_0` is the
  fraction of tasks with any correct attempt (a correct attempt's speedup is always positive).
- `best@k`: the expected best value of k trajectories drawn without replacement from a task's n, with the unbiased
  estimator `Σ_i v_(i)·C(i−1, k−1) / C(n, k)` over the sorted per-trajectory bests, averaged over tasks.
- Rates (`correct`, `compiled`, `hack`, `format_error`, `not_okay`) are fractions of all attempts (responses); with
  an LLM reviewer (`judge=`, docs/preference.md) also `review_flag`: attempts the reviewer flagged for review.
- Uncertainty (`ConfigMetrics.ci`): 95 % percentile-bootstrap intervals of every mean over tasks (mean speedup,
  solved, best-so-far by turn, best@k, pass@k): tasks resampled with replacement (`bootstrap_ci`), since tasks, not
  attempts, are the units a benchmark samples. Timing noise within a task is not in them.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernel_gym.pyast import parse_source

BOOTSTRAP_SAMPLES = 2000
"""Resamples of the task set behind each interval (the percentile bootstrap; seeded, so reports are reproducible)."""

CI_LEVEL = 0.95

DEFAULT_THRESHOLDS = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)
"""The p of fast_p reported by default (KernelBench reports fast_0, fast_1 and fast_2; Dr. Kernel fast_1.2)."""

OPENING_CHARS = 512
"""How much of a response's start the garbage-opening check reads."""

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*$", re.MULTILINE)
_REPEAT = re.compile(r"(.{1,64}?)\1{3,}", re.DOTALL)


@dataclass(frozen=True)
class Attempt:
    """One turn's outcome, as the metrics see it."""

    turn: int
    correct: bool
    speedup: float | None = None
    format_ok: bool = True
    compiled: bool = False
    hacks: tuple[str, ...] = ()
    error: str | None = None
    not_okay: str | None = None
    """The Not-Okay reason of the response (see `not_okay_reason`), None when the response is well-formed."""
    score: float = 0.0
    review_flags: tuple[str, ...] | None = None
    """The LLM reviewer's review flags (`info["review_flags"]`, e.g. judge_not_genuine); None when the env had no
    reviewer (`judge=`)."""
    judge: float | None = None
    """The LLM reviewer's rating in [0, 1] (`info["signals"]["judge"]`); None when the turn was not rated."""
    infra_failure: bool = False
    """The evaluation infrastructure failed on this turn (`info["infra_failure"]`): its 0 is no verdict."""
    summary_fallback: bool = False
    """The turn's summary was to be the model's but fell back to the extractive one (`info["summary_source"]`)."""

    @property
    def value(self) -> float:
        """Kevin's per-attempt speedup: the speedup when correct, else 0."""
        return float(self.speedup or 0.0) if self.correct else 0.0

    def fast(self, p: float) -> bool:
        """KernelBench's fast_p event: correct and speedup > p (p = 0: correct)."""
        return self.correct and (p <= 0 or float(self.speedup or 0.0) > p)

    @classmethod
    def from_info(cls, info: dict[str, Any], not_okay: str | None = None) -> Attempt:
        """From an env step's `info`."""
        return cls(turn=int(info.get("turn", 1)), correct=bool(info.get("correct")), speedup=info.get("speedup"),
                   format_ok=bool(info.get("format_ok", True)), compiled=bool(info.get("compiled")),
                   hacks=tuple(info.get("hacks") or ()), error=info.get("error"), not_okay=not_okay,
                   score=float(info.get("score") or 0.0), review_flags=_flags(info.get("review_flags")),
                   judge=(info.get("signals") or {}).get("judge"), infra_failure=bool(info.get("infra_failure")),
                   summary_fallback=info.get("summary_source") == "fallback")


def _flags(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(str(f) for f in value)


@dataclass(frozen=True)
class Trajectory:
    """One trajectory of a configuration "KxT": up to T attempts at one task, in turn order."""

    task: str
    config: str
    index: int
    attempts: tuple[Attempt, ...]
    turns: int = 0
    """The planned number of turns (T); 0 means len(attempts)."""

    @property
    def complete(self) -> bool:
        return len(self.attempts) >= (self.turns or len(self.attempts))

    def best(self, turns: int | None = None) -> float:
        """The best value among the first `turns` attempts (all by default); 0 when none is correct."""
        return max((a.value for a in self.attempts[:turns]), default=0.0)


@dataclass
class ConfigMetrics:
    """Every metric of one configuration (trajectories x turns) over its tasks."""

    config: str
    tasks: int
    trajectories: int
    attempts: int
    rates: dict[str, float]
    """Fractions of attempts: correct, compiled, hack, format_error, not_okay; review_flag with an LLM reviewer."""
    solved: float
    """Fraction of tasks with a correct attempt (= fast_0)."""
    mean_speedup: float
    """Kevin's mean over tasks of the best correct speedup (0 for a task never solved)."""
    fast_p: dict[float, float]
    best_at_k: dict[int, float]
    """k trajectories -> mean over tasks of the expected best speedup."""
    pass_at_k: dict[int, float]
    """k trajectories -> mean over tasks of the probability that one of them is correct."""
    turn_best: list[float]
    """t -> mean over tasks of the best speedup over all trajectories within their first t turns."""
    turn_mean: list[float]
    """t -> mean over tasks and trajectories of a trajectory's best speedup within its first t turns."""
    budget_curve: list[tuple[int, float]]
    """(attempts per task = k·T, best@k) for k = 1..K: the configuration's curve at growing budget."""
    not_okay_reasons: dict[str, int] = field(default_factory=dict)
    review_flags: dict[str, int] = field(default_factory=dict)
    """Review flag name -> attempts carrying it (an LLM reviewer's; empty without one)."""
    judge_mean: float | None = None
    """Mean of the LLM reviewer's rating over the attempts it rated; None when none was rated."""
    infra_failures: int = 0
    """Attempts the evaluation infrastructure failed on (counted as incorrect: rerun them for a clean comparison)."""
    ci: dict[str, Any] = field(default_factory=dict)
    """95 % bootstrap intervals over tasks, (low, high): "mean_speedup", "solved"; lists by turn "turn_best",
    "turn_mean"; dicts by k "best_at_k", "pass_at_k" (see `bootstrap_ci`)."""

    def flat(self) -> dict[str, float]:
        """Namespaced scalars, for a table or a logger."""
        out = {f"rate/{k}": v for k, v in self.rates.items()}
        out.update({"task/solved": self.solved, "task/mean_speedup": self.mean_speedup})
        out.update({f"task/fast_{_p(p)}": v for p, v in self.fast_p.items()})
        out.update({f"best@{k}": v for k, v in self.best_at_k.items()})
        out.update({f"pass@{k}": v for k, v in self.pass_at_k.items()})
        out.update({f"turn/best@{t + 1}": v for t, v in enumerate(self.turn_best)})
        if self.judge_mean is not None:
            out["judge/mean"] = self.judge_mean
        return out


def _p(p: float) -> str:
    return f"{p:g}"


# ---- Not-Okay ---------------------------------------------------------------------------------------------------
def not_okay_reason(response: object) -> str | None:
    """Why a response is Not-Okay (its opening or structure is malformed), or None. The first that applies:

    - `empty`: no text, or only whitespace.
    - `garbage_opening`: the first 512 characters (after leading whitespace) are degenerate: a NUL, U+FFFD or more
      than 1% other control characters, or a unit of 1-64 characters repeated back to back (4+ times) over at least
      64 characters from the very start ("!!!!...", "the the the ...", one line over and over).
    - `no_code_block`: no fenced code block.
    - `unclosed_code_block`: the last code block never closes (typically cut at the token limit).
    - `empty_code_block`: the last code block has no code.
    - `unparseable`: the last code block is not valid Python (`ast.parse` fails).
    """
    if not isinstance(response, str) or not response.strip():
        return "empty"
    opening = response.lstrip()[:OPENING_CHARS]
    if _garbage(opening):
        return "garbage_opening"
    block = _last_block(response)
    if block is None:
        return "no_code_block"
    code, closed = block
    if not closed:
        return "unclosed_code_block"
    if not code.strip():
        return "empty_code_block"
    try:
        parse_source(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "unparseable"
    return None


def _garbage(opening: str) -> bool:
    if "\x00" in opening or "\ufffd" in opening:
        return True
    control = sum(1 for c in opening if ord(c) < 32 and c not in "\n\r\t")
    if control > 0.01 * len(opening):
        return True
    m = _REPEAT.match(opening)
    return m is not None and m.end() >= 64


def _last_block(text: str) -> tuple[str, bool] | None:
    """(code, closed) of the last fenced block; a fence closes with the same character and at least its length."""
    opened, last = None, None
    for m in _FENCE.finditer(text):
        fence, rest = m.group(1), m.group(0).strip()[len(m.group(1)):]
        if opened is None:
            opened = (fence, m.end() + 1)
        elif fence[0] == opened[0][0] and len(fence) >= len(opened[0]) and not rest.strip():
            last, opened = (text[opened[1]:m.start()], True), None
    if opened is not None:
        return text[opened[1]:], False
    return last


# ---- per-task values ----------------------------------------------------------------------------------------------
def by_task(trajectories: Iterable[Trajectory]) -> dict[str, list[Trajectory]]:
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        groups[t.task].append(t)
    return dict(groups)


def bootstrap_ci(per_task: Sequence[float] | Sequence[Sequence[float]], samples: int = BOOTSTRAP_SAMPLES,
                 level: float = CI_LEVEL, seed: int = 0) -> list[tuple[float, float]]:
    """Percentile-bootstrap intervals of the mean over tasks: `per_task` has one row per task (a value, or a row of
    values: one per point of a curve); tasks are resampled with replacement `samples` times. One (low, high) per
    column; (v, v) with a single task (no spread can be estimated from one)."""
    import numpy as np

    x = np.asarray(per_task, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    n = x.shape[0]
    if n == 0:
        return [(0.0, 0.0)] * (x.shape[1] if x.ndim == 2 else 1)
    counts = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=samples)  # samples x tasks
    means = counts @ x / n  # samples x points: each resample's mean over tasks
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return [(float(a), float(b)) for a, b in zip(low, high)]


def best_at_k(values: Sequence[float], k: int) -> float:
    """Expected maximum of k values drawn without replacement from `values` (unbiased; exact for k = len)."""
    n = len(values)
    if not 1 <= k <= n:
        raise ValueError(f"best@k needs 1 <= k <= n, got k={k}, n={n}")
    ordered = sorted(values)
    total = math.comb(n, k)
    return sum(v * math.comb(i, k - 1) for i, v in enumerate(ordered) if i >= k - 1) / total


def pass_at_k(correct: Sequence[bool], k: int) -> float:
    """Probability that k draws without replacement include a correct one (Chen et al.'s unbiased pass@k)."""
    return best_at_k([1.0 if c else 0.0 for c in correct], k)


def mean_speedup(trajectories: Iterable[Trajectory]) -> float:
    """Kevin's mean speedup: the mean over tasks of each task's best correct speedup (0 when never correct)."""
    groups = by_task(trajectories)
    return _mean(max(t.best() for t in trajs) for trajs in groups.values())


def fast_p(trajectories: Iterable[Trajectory], p: float) -> float:
    """KernelBench's fast_p: the fraction of tasks with an attempt that is correct and has speedup > p."""
    groups = by_task(trajectories)
    return _mean(float(any(a.fast(p) for t in trajs for a in t.attempts)) for trajs in groups.values())


def turn_curves(trajectories: Iterable[Trajectory]) -> tuple[list[float], list[float]]:
    """(best, mean) best-so-far curves by turn t = 1..T: over tasks, of the best speedup within the first t turns
    of all the task's trajectories (best), or of one trajectory, averaged over trajectories (mean)."""
    best, mean = _turn_rows(trajectories)
    return [_mean(col) for col in zip(*best)], [_mean(col) for col in zip(*mean)]


def _turn_rows(trajectories: Iterable[Trajectory]) -> tuple[list[list[float]], list[list[float]]]:
    """Per task, per turn t: the best-so-far over all its trajectories (best) and averaged over them (mean)."""
    groups = by_task(trajectories)
    turns = max((len(t.attempts) for trajs in groups.values() for t in trajs), default=0)
    best = [[max(t.best(n) for t in trajs) for n in range(1, turns + 1)] for trajs in groups.values()]
    mean = [[_mean(t.best(n) for t in trajs) for n in range(1, turns + 1)] for trajs in groups.values()]
    return best, mean


def _intervals(groups: dict[str, list[Trajectory]], bests: dict[str, list[float]],
               solved: dict[str, list[bool]], k_max: int) -> dict[str, Any]:
    """`ConfigMetrics.ci`: bootstrap intervals over tasks of each mean the metrics report."""
    trajectories = [t for trajs in groups.values() for t in trajs]
    best_rows, mean_rows = _turn_rows(trajectories)
    ks = range(1, k_max + 1)
    at_k = bootstrap_ci([[best_at_k(v, k) for k in ks] for v in bests.values()]) if k_max else []
    pass_k = bootstrap_ci([[pass_at_k(v, k) for k in ks] for v in solved.values()]) if k_max else []
    return {"mean_speedup": bootstrap_ci([max(v) for v in bests.values()])[0],
            "solved": bootstrap_ci([float(any(v)) for v in solved.values()])[0],
            "turn_best": bootstrap_ci(best_rows) if best_rows and best_rows[0] else [],
            "turn_mean": bootstrap_ci(mean_rows) if mean_rows and mean_rows[0] else [],
            "best_at_k": dict(zip(ks, at_k)), "pass_at_k": dict(zip(ks, pass_k))}


def config_metrics(config: str, trajectories: Sequence[Trajectory],
                   thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> ConfigMetrics:
    """All metrics of one configuration's trajectories (pass only complete ones for a fair comparison)."""
    groups = by_task(trajectories)
    attempts = [a for t in trajectories for a in t.attempts]
    n = len(attempts)

    def rate(pred) -> float:
        return sum(1 for a in attempts if pred(a)) / n if n else 0.0

    rates = {"correct": rate(lambda a: a.correct), "compiled": rate(lambda a: a.compiled),
             "hack": rate(lambda a: bool(a.hacks)), "format_error": rate(lambda a: not a.format_ok),
             "not_okay": rate(lambda a: a.not_okay is not None),
             "summary_fallback": rate(lambda a: a.summary_fallback)}
    if any(a.review_flags is not None for a in attempts):  # an LLM reviewer was configured: beside the hack rate
        rates["review_flag"] = rate(lambda a: bool(a.review_flags))
    ratings = [a.judge for a in attempts if a.judge is not None]
    k_max = min((len(trajs) for trajs in groups.values()), default=0)
    bests = {task: [t.best() for t in trajs] for task, trajs in groups.items()}
    solved = {task: [any(a.correct for a in t.attempts) for t in trajs] for task, trajs in groups.items()}
    at_k = {k: _mean(best_at_k(v, k) for v in bests.values()) for k in range(1, k_max + 1)}
    turns = max((len(t.attempts) for t in trajectories), default=0)
    turn_best, turn_mean = turn_curves(trajectories)
    return ConfigMetrics(
        config=config, tasks=len(groups), trajectories=len(trajectories), attempts=n, rates=rates,
        solved=fast_p(trajectories, 0.0), mean_speedup=mean_speedup(trajectories),
        fast_p={float(p): fast_p(trajectories, p) for p in thresholds}, best_at_k=at_k,
        pass_at_k={k: _mean(pass_at_k(v, k) for v in solved.values()) for k in range(1, k_max + 1)},
        turn_best=turn_best, turn_mean=turn_mean, budget_curve=[(k * turns, v) for k, v in at_k.items()],
        not_okay_reasons=dict(Counter(a.not_okay for a in attempts if a.not_okay)),
        review_flags=dict(Counter(f for a in attempts for f in a.review_flags or ())),
        judge_mean=_mean(ratings) if ratings else None, infra_failures=sum(a.infra_failure for a in attempts),
        ci=_intervals(groups, bests, solved, k_max))


def summarize(trajectories: Iterable[Trajectory], thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
              include_incomplete: bool = False) -> dict[str, ConfigMetrics]:
    """Metrics per configuration label, in order of first appearance; incomplete trajectories left out by default."""
    groups: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        if t.complete or include_incomplete:
            groups.setdefault(t.config, []).append(t)
    return {config: config_metrics(config, trajs, thresholds) for config, trajs in groups.items()}


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class PairedDifference:
    """Configuration `a` minus configuration `b` on the tasks both ran: Kevin's mean speedup (per task the best
    correct speedup over the configuration's trajectories), its paired bootstrap interval over tasks, and the
    winner when the interval excludes 0 (None: no winner can be stated)."""

    a: str
    b: str
    tasks: int
    difference: float
    ci: tuple[float, float]

    @property
    def winner(self) -> str | None:
        if self.tasks < 2:  # one task: no spread can be estimated, so no winner either
            return None
        low, high = self.ci
        return self.a if low > 0 else self.b if high < 0 else None


def paired_difference(trajectories: Iterable[Trajectory], a: str, b: str) -> PairedDifference:
    """`a` - `b` (configuration labels), tasks resampled in pairs: the same task's two bests stay together, so the
    spread between tasks (most of it) cancels and the interval is that of the difference itself."""
    best: dict[str, dict[str, float]] = {a: {}, b: {}}
    for t in trajectories:
        if t.config in best and t.complete:
            best[t.config][t.task] = max(best[t.config].get(t.task, 0.0), t.best())
    common = sorted(set(best[a]) & set(best[b]))
    diffs = [best[a][task] - best[b][task] for task in common]
    mean = sum(diffs) / len(diffs) if diffs else 0.0
    return PairedDifference(a, b, len(common), mean, bootstrap_ci(diffs)[0])  # ((0, 0) for no common task)
