"""The rollout log: `OUT/rollout.jsonl`, one record per step, fsynced, plus `OUT/run.json` (the run's settings).

A record is an env trajectory record (kernel_gym.trajectory; `kernel-gym samples` reads it) with the rollout's keys:

    {"config": "32x4", "task", "trajectory": 3, "turn": 2, "turns": 4, "episode_id", "seed", "policy",
     "prompt" (the observation answered; left out with log_prompts=False), "action" (the response), "not_okay",
     "info" (the step's info), "reward", "gamma", "aggregation", "time"}

A trajectory is identified by (config, task, trajectory); it is complete when one episode of it has every turn
1..T. Re-running skips complete trajectories and continues an incomplete one from its last logged turn: its env is
rebuilt from the logged turns 1..k (`KernelRefineEnv.restore`: the observation carries each turn's summary, kernel
and feedback; nothing is evaluated or asked again) and plays turn k+1 on, under the same episode id. Readers keep,
per trajectory, its first complete episode (or, when none is complete, its longest).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernel_gym.metrics import Attempt, Trajectory, not_okay_reason
from kernel_gym.trajectory import read_log

LOG_NAME = "rollout"
RUN_FILE = "run.json"

Key = tuple[str, str, int]  # (config, task, trajectory index)


def log_path(out: str | Path) -> Path:
    return Path(out) / f"{LOG_NAME}.jsonl"


def read_records(source: str | Path | Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Step records from a rollout folder, a .jsonl log, or records in memory (records without a config skipped)."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        path = log_path(path) if path.is_dir() else path
        records = read_log(path) if path.is_file() else []
    else:
        records = list(source)
    return [r for r in records if isinstance(r.get("info"), dict) and "config" in r and "turn" in r]


def episodes_by_key(records: Iterable[dict[str, Any]]) -> dict[Key, list[dict[str, Any]]]:
    """Per trajectory key, the records of the episode that represents it (see the module docstring), by turn."""
    grouped: dict[Key, dict[str, dict[int, dict[str, Any]]]] = {}
    for r in records:
        key = (str(r["config"]), str(r["task"]), int(r["trajectory"]))
        episode = grouped.setdefault(key, {}).setdefault(str(r.get("episode_id")), {})
        episode.setdefault(int(r["turn"]), r)
    chosen = {}
    for key, episodes in grouped.items():
        ordered = [[ep[t] for t in sorted(ep)] for ep in episodes.values()]
        complete = [ep for ep in ordered if _complete(ep)]
        chosen[key] = complete[0] if complete else max(ordered, key=len)
    return chosen


def _complete(episode: list[dict[str, Any]]) -> bool:
    turns = int(episode[0].get("turns") or 0)
    return turns > 0 and [int(r["turn"]) for r in episode] == list(range(1, turns + 1))


def end_cut_line(path: Path) -> None:
    """End a last line cut off by a crash, so that the next record appended starts on a line of its own."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        f.seek(-1, 2)
        if f.read(1) != b"\n":
            f.write(b"\n")


def completed_keys(records: Iterable[dict[str, Any]]) -> set[Key]:
    return {key for key, ep in episodes_by_key(records).items() if _complete(ep)}


def partial_episodes(records: Iterable[dict[str, Any]]) -> dict[Key, list[dict[str, Any]]]:
    """Per incomplete trajectory, the records of its longest episode when they are turns 1..k (what a resume
    continues from); a trajectory whose episode misses a turn in between is not in it (it is run from turn 1)."""
    out = {}
    for key, ep in episodes_by_key(records).items():
        if not _complete(ep) and [int(r["turn"]) for r in ep] == list(range(1, len(ep) + 1)):
            out[key] = ep
    return out


def trajectories(source: str | Path | Iterable[dict[str, Any]]) -> list[Trajectory]:
    """Every trajectory in a rollout log (complete or not), ordered by config, task and index."""
    chosen = episodes_by_key(read_records(source))
    out = []
    for (config, task, index), episode in chosen.items():
        attempts = tuple(_attempt(r) for r in episode)
        out.append(Trajectory(task=task, config=config, index=index, attempts=attempts,
                              turns=int(episode[0].get("turns") or len(attempts))))
    return sorted(out, key=lambda t: (_config_order(t.config), t.task, t.index))


def _attempt(record: dict[str, Any]) -> Attempt:
    reason = record["not_okay"] if "not_okay" in record else not_okay_reason(record.get("action", ""))
    return Attempt.from_info(record["info"], not_okay=reason)


def _config_order(label: str) -> tuple[int, int, str]:
    k, _, t = label.partition("x")
    return (-int(k), int(t), label) if k.isdigit() and t.isdigit() else (0, 0, label)


def read_run(out: str | Path) -> dict[str, Any] | None:
    path = Path(out) / RUN_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def write_run(out: str | Path, run: dict[str, Any]) -> None:
    path = Path(out) / RUN_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(run, indent=2, default=str) + "\n")
    tmp.replace(path)
