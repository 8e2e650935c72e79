"""Candidates of the same task -> preference pairs (chosen, rejected) with the evidence that decided each.

Rules, in order (docs/preference.md):
1. `correct>hacked`, `correct>incorrect`: a correct kernel beats one that failed or tripped an anti-hack check.
2. `clean>hacked`: a failed but honest response beats a hacked one (`hacked_pairs=True`, the default).
3. `faster`: between two correct kernels measured on the same device, the faster wins only when

       ratio = max(runtime_a, runtime_b) / min(runtime_a, runtime_b) > 1 + max(min_gap, k · sqrt(cv_a² + cv_b²))

   where cv is each runtime's coefficient of variation over its timed trials (a CV missing from the log counts as
   `missing_cv`). Inside that band the two are a tie and give no pair.
Two incorrect, or two hacked, responses give no pair. Identical code (trailing whitespace ignored) counts once.
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.preference.candidates import CORRECT, HACKED, INCORRECT, Candidate, read_candidates

logger = logging.getLogger(__name__)

FORMATS = ("plain", "chat")
GROUPS = ("task", "prompt")


@dataclass(frozen=True, kw_only=True)
class PairConfig:
    """How candidates become pairs."""

    min_gap: float = 0.02
    """Floor of the speed margin: a faster kernel must be at least this much faster (0.02 = 2 %)."""
    noise_k: float = 2.0
    """How many combined timing standard deviations a speed margin must exceed."""
    missing_cv: float = 0.05
    """The CV assumed for a runtime whose log has none (older logs)."""
    max_per_task: int | None = 64
    """Most pairs kept per task (a seeded random subset); None keeps all."""
    group: str = "task"
    """"task": any two responses to a task; "prompt": only responses to the same observation (strict DPO)."""
    hacked_pairs: bool = True
    """Emit `clean>hacked` pairs (an honest failure beats a hack)."""
    seed: int = 0
    """Seed of the per-task subset."""
    format: str = "plain"
    """"plain": prompt/chosen/rejected are strings; "chat": lists of chat messages."""

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ConfigError(f"format must be one of {FORMATS}, got {self.format!r}")
        if self.group not in GROUPS:
            raise ConfigError(f"group must be one of {GROUPS}, got {self.group!r}")
        if self.min_gap < 0 or self.noise_k < 0 or self.missing_cv < 0:
            raise ConfigError("min_gap, noise_k and missing_cv must be >= 0")
        if self.max_per_task is not None and self.max_per_task < 1:
            raise ConfigError(f"max_per_task must be >= 1 or None, got {self.max_per_task}")


@dataclass(frozen=True)
class Verdict:
    """Which of two candidates wins, by which rule; `band` holds the speed test's numbers for `faster`."""

    chosen: Candidate
    rejected: Candidate
    rule: str
    band: dict[str, float] | None = None


@dataclass
class PairStats:
    """What a run of `make_pairs` found: candidates read, duplicates dropped, ties inside the noise band, pairs."""

    candidates: int = 0
    duplicates: int = 0
    ties_in_band: int = 0
    untimed: int = 0
    capped: int = 0
    rules: Counter = field(default_factory=Counter)


_TIER_RANK = {CORRECT: 2, INCORRECT: 1, HACKED: 0}


def noise_band(a: Candidate, b: Candidate, config: PairConfig) -> dict[str, float] | None:
    """The speed test for two correct kernels: ratio, noise, threshold and whether the ratio clears it.

    None when either runtime is unknown."""
    if not a.runtime_ms or not b.runtime_ms or a.runtime_ms <= 0 or b.runtime_ms <= 0:
        return None
    cv_a = a.runtime_cv if a.runtime_cv is not None else config.missing_cv
    cv_b = b.runtime_cv if b.runtime_cv is not None else config.missing_cv
    noise = math.sqrt(cv_a**2 + cv_b**2)
    threshold = 1.0 + max(config.min_gap, config.noise_k * noise)
    ratio = max(a.runtime_ms, b.runtime_ms) / min(a.runtime_ms, b.runtime_ms)
    return {"ratio": ratio, "noise": noise, "threshold": threshold, "min_gap": config.min_gap,
            "noise_k": config.noise_k, "decided": float(ratio > threshold)}


def compare(a: Candidate, b: Candidate, config: PairConfig) -> Verdict | str | None:
    """The verdict on two candidates; the string "tie" (inside the noise band), "untimed", or None (no rule)."""
    ta, tb = a.tier, b.tier
    if ta != tb:
        win, lose = (a, b) if _TIER_RANK[ta] > _TIER_RANK[tb] else (b, a)
        if win.tier == INCORRECT and not config.hacked_pairs:
            return None
        return Verdict(win, lose, f"{'clean' if win.tier == INCORRECT else 'correct'}>{lose.tier}")
    if ta != CORRECT:
        return None
    band = noise_band(a, b, config)
    if band is None:
        return "untimed"
    if not band["decided"]:
        return "tie"
    win, lose = (a, b) if a.runtime_ms < b.runtime_ms else (b, a)
    return Verdict(win, lose, "faster", band)


def dedupe(candidates: Iterable[Candidate], group: str = "task") -> tuple[list[Candidate], int]:
    """Candidates with identical code (per task, or per prompt) kept once, the first logged; and how many went."""
    seen: set[tuple[str, str, str]] = set()
    kept, dropped = [], 0
    for c in candidates:
        key = (c.task, (c.prompt or "") if group == "prompt" else "", c.code_hash)
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        kept.append(c)
    return kept, dropped


def _groups(candidates: Sequence[Candidate], group: str) -> list[list[Candidate]]:
    """Candidates that may be compared: same task and device (and same prompt for group="prompt")."""
    grouped: dict[tuple[str, str], list[Candidate]] = defaultdict(list)
    for c in candidates:
        if group == "prompt" and c.prompt is None:
            continue
        grouped[(c.device, c.prompt if group == "prompt" else "")].append(c)
    return list(grouped.values())


def task_verdicts(candidates: Sequence[Candidate], config: PairConfig, stats: PairStats) -> list[Verdict]:
    """Every decided pair among one task's candidates, capped at `max_per_task` by a seeded random subset."""
    verdicts = []
    for members in _groups(candidates, config.group):
        for a, b in combinations(members, 2):
            v = compare(a, b, config)
            if v == "tie":
                stats.ties_in_band += 1
            elif v == "untimed":
                stats.untimed += 1
            elif isinstance(v, Verdict):
                verdicts.append(v)
    cap = config.max_per_task
    if cap is not None and len(verdicts) > cap:
        rng = random.Random(f"{config.seed}/{candidates[0].task}")  # str seeds are stable across processes
        keep = sorted(rng.sample(range(len(verdicts)), cap))
        stats.capped += len(verdicts) - cap
        verdicts = [verdicts[i] for i in keep]
    return verdicts


def task_prompt(candidates: Sequence[Candidate]) -> str | None:
    """The task's opening prompt (a turn-1 observation), the shared context of group="task" pairs."""
    for c in candidates:
        if c.turn == 1 and c.prompt is not None:
            return c.prompt
    return None


def pair_record(v: Verdict, prompt: str | None, config: PairConfig) -> dict[str, Any]:
    """One JSONL record: prompt, chosen, rejected (strings, or chat messages), task, rule and evidence."""
    prompt = prompt or ""
    if config.format == "chat":
        head: dict[str, Any] = {"prompt": [{"role": "user", "content": prompt}],
                                "chosen": [{"role": "assistant", "content": v.chosen.response}],
                                "rejected": [{"role": "assistant", "content": v.rejected.response}]}
    else:
        head = {"prompt": prompt, "chosen": v.chosen.response, "rejected": v.rejected.response}
    evidence = {"rule": v.rule, "noise_band": v.band, "same_prompt": v.chosen.prompt == v.rejected.prompt,
                "chosen": v.chosen.evidence(), "rejected": v.rejected.evidence()}
    return {**head, "task": v.chosen.task, "rule": v.rule, "evidence": evidence}


def make_pairs(candidates: Iterable[Candidate], config: PairConfig | None = None,
               stats: PairStats | None = None) -> list[dict[str, Any]]:
    """Pair records from candidates (any order of tasks; output sorted by task, deterministic for a seed)."""
    config = config or PairConfig()
    stats = stats if stats is not None else PairStats()
    candidates = list(candidates)
    stats.candidates += len(candidates)
    kept, dropped = dedupe(candidates, config.group)
    stats.duplicates += dropped
    by_task: dict[str, list[Candidate]] = defaultdict(list)
    for c in kept:
        by_task[c.task].append(c)
    records, missing = [], 0
    for task in sorted(by_task):
        members = by_task[task]
        shared = task_prompt(members) if config.group == "task" else None
        for v in task_verdicts(members, config, stats):
            stats.rules[v.rule] += 1
            prompt = shared if shared is not None else (v.chosen.prompt or v.rejected.prompt)
            missing += prompt is None
            records.append(pair_record(v, prompt, config))
    if missing:
        logger.warning("%d pairs have an empty prompt (their logs were written without prompts)", missing)
    return records


def pairs_from_logs(paths: Iterable[str | Path], config: PairConfig | None = None,
                    stats: PairStats | None = None) -> list[dict[str, Any]]:
    """`make_pairs` over every response in the logs (files, or folders searched for *.jsonl)."""
    return make_pairs(read_candidates(paths), config, stats)


def write_pairs(records: Iterable[dict[str, Any]], out: str | Path) -> int:
    """Write records as JSONL (one object a line, UTF-8); returns how many."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            n += 1
    return n


def stats_dict(stats: PairStats) -> dict[str, Any]:
    out = asdict(stats)
    out["rules"] = dict(sorted(stats.rules.items()))
    return out
