"""Trajectory logs -> one training sample per turn (Kevin trains on every refinement turn, each with its return).

A log record (kernel_gym.trajectory, one per step) holds the action and the observation *after* the step; since
this version it also holds `prompt`, the observation the action answered (the reset prompt on turn 1). A sample:

    {"episode_id", "task", "turn", "prompt", "response", "score", "return", "correct", "speedup", "error",
     "hacks", "episode_complete", "episode_turns", "gamma", "aggregation"}

or, with `chat=True`, `messages` = [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]
in place of `prompt` and `response`.

Returns: with an explicit `gamma` or `mode`, recomputed as `aggregate(scores, gamma, mode)` over the episode's
logged turns; otherwise the episode's own `info["returns"]` (its last step), or, for an episode without them
(a killed run), `aggregate` with the gamma and aggregation its records logged (0.4 and "sum" for old logs).
An incomplete episode still yields a sample per logged turn, its returns computed over the turns present only
(`episode_complete` is False): the turns that never ran contribute nothing, so its early returns are lower
bounds of what the full episode would have given (either aggregation, scores being non-negative).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.rewards import aggregate
from kernel_gym.trajectory import read_log

logger = logging.getLogger(__name__)

DEFAULT_GAMMA, DEFAULT_MODE = 0.4, "sum"


@dataclass(frozen=True)
class Episode:
    """The logged steps of one episode, in turn order."""

    episode_id: str
    records: list[dict[str, Any]]

    @property
    def complete(self) -> bool:
        """Whether its last step ended the episode (that step's info carries the returns)."""
        return bool(self.records) and "returns" in self.records[-1].get("info", {})

    @property
    def scores(self) -> list[float]:
        return [float(r["info"]["score"]) for r in self.records]


def log_files(paths: Iterable[str | Path]) -> list[Path]:
    """The .jsonl files named, or found (recursively) in the folders named."""
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.rglob("*.jsonl")) if p.is_dir() else [p])
    return files


def check_logs(paths: Iterable[str | Path]) -> list[Path]:
    """The trajectory logs of `paths`: a file named must be one; a folder must hold at least one (its other .jsonl
    files, e.g. samples written beside a run's log, are passed over). Otherwise a `ConfigError` names the path that
    is missing, the folder without logs, or the file that is not a log."""
    paths = list(map(Path, paths))
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise ConfigError(f"no such log: {', '.join(missing)}")
    files: list[Path] = []
    for p in paths:
        found = [f for f in log_files([p]) if _is_log(f)]
        if not found:
            raise ConfigError(f"{p} is not a trajectory log: no record with 'turn' and 'info' (a log is the JSONL "
                              "an env writes with log_dir=..., or a `kernel-gym rollout` folder)" if p.is_file() else
                              f"{p} holds no trajectory log (.jsonl records with 'turn' and 'info')")
        files.extend(f for f in found if f not in files)
    return files


def _is_log(path: Path) -> bool:
    return any(isinstance(r.get("info"), dict) and "turn" in r for r in read_log(path))


def episodes(paths: Iterable[str | Path]) -> list[Episode]:
    """Records of every log, grouped by episode_id, each episode's turns in order (a repeated turn keeps its first)."""
    grouped: dict[str, dict[int, dict[str, Any]]] = {}
    for path in log_files(paths):
        for record in read_log(path):
            if not isinstance(record.get("info"), dict) or "turn" not in record:
                continue
            key = str(record.get("episode_id") or f"{path}:{record.get('task')}")
            grouped.setdefault(key, {}).setdefault(int(record["turn"]), record)
    return [Episode(eid, [turns[t] for t in sorted(turns)]) for eid, turns in grouped.items()]


def episode_returns(episode: Episode, gamma: float | None = None, mode: str | None = None) -> tuple[list[float], float, str]:
    """(returns, gamma, mode) for an episode, following the rules in the module docstring."""
    last = episode.records[-1]
    logged_gamma = float(last.get("gamma", DEFAULT_GAMMA))
    logged_mode = str(last.get("aggregation", DEFAULT_MODE))
    if gamma is None and mode is None and episode.complete:
        returns = [float(r) for r in last["info"]["returns"]]
        if len(returns) == len(episode.records):
            return returns, logged_gamma, logged_mode
    gamma = logged_gamma if gamma is None else float(gamma)
    mode = logged_mode if mode is None else mode
    return aggregate(episode.scores, gamma, mode), gamma, mode


def _prompt(records: list[dict[str, Any]], i: int) -> str | None:
    if "prompt" in records[i]:
        return records[i]["prompt"]
    if i > 0 and records[i - 1].get("turn") == records[i].get("turn", 0) - 1:
        return records[i - 1].get("observation")  # an older log: the previous step's observation is what it saw
    return None


def episode_samples(episode: Episode, gamma: float | None = None, mode: str | None = None,
                    chat: bool = False) -> Iterator[dict[str, Any]]:
    """One sample per logged turn of `episode` (a turn whose prompt is unknown is skipped, with a warning)."""
    returns, gamma, mode = episode_returns(episode, gamma, mode)
    for i, (record, ret) in enumerate(zip(episode.records, returns)):
        prompt, info = _prompt(episode.records, i), record["info"]
        if prompt is None:
            logger.warning("episode %s turn %s: the log has no prompt for it (written before prompts were logged);"
                           " skipped", episode.episode_id, record.get("turn"))
            continue
        sample: dict[str, Any] = {"episode_id": episode.episode_id, "task": record.get("task", info.get("task")),
                                  "turn": int(record["turn"])}
        if chat:
            sample["messages"] = [{"role": "user", "content": prompt},
                                  {"role": "assistant", "content": record.get("action", "")}]
        else:
            sample["prompt"], sample["response"] = prompt, record.get("action", "")
        sample.update({"score": float(info["score"]), "return": ret, "correct": bool(info.get("correct")),
                       "speedup": info.get("speedup"), "error": info.get("error"), "hacks": list(info.get("hacks", [])),
                       "episode_complete": episode.complete, "episode_turns": len(episode.records), "gamma": gamma,
                       "aggregation": mode})
        yield sample


def samples_from_logs(paths: Iterable[str | Path], gamma: float | None = None, mode: str | None = None,
                      chat: bool = False) -> list[dict[str, Any]]:
    """Every turn of every episode in the logs as a training sample (see the module docstring)."""
    return [s for ep in episodes(paths) for s in episode_samples(ep, gamma, mode, chat)]
