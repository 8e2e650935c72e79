"""Replay: responses read from a file (or a list), looked up by task / turn / trajectory / configuration.

A record is a JSON object with the response text under one of `response`, `action`, `completion`, `text`,
`output`, `content` (or `messages`, whose last assistant message is taken), and any of the keys `config`, `task`,
`trajectory`, `turn`; or a bare JSON string (a record with no keys). A `kernel-gym rollout` log and an env
trajectory log (`log_dir=`) are both valid replay files: replaying a rollout's log replays its responses.

Lookup: among the records whose keys all equal the request's, those with the most keys answer (ties broken in the
order config, task, trajectory, turn). When several records share those keys: without a `trajectory` key,
trajectory i takes the (i mod n)-th of them (a list of samples per task); with a `trajectory` but no `turn` key,
turn t takes the ((t - 1) mod n)-th (a trajectory's turns in order); with both keys, the last in the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.policies.base import Policy, PolicyError, Request, register_policy

KEYS = ("config", "task", "trajectory", "turn")
TEXT_FIELDS = ("response", "action", "completion", "text", "output", "content")


class ReplayPolicy(Policy):
    """Responses from a JSONL file (one record a line), a JSON file (a list of records), or a list in memory.

    `on_missing="error"` raises PolicyError for a request no record answers; `"empty"` answers "" (a format error).
    """

    def __init__(self, source: str | Path | Sequence[Any], *, on_missing: str = "error", name: str | None = None):
        if on_missing not in ("error", "empty"):
            raise ConfigError(f"on_missing must be 'error' or 'empty', got {on_missing!r}")
        self.on_missing = on_missing
        is_file = isinstance(source, (str, Path))
        raw = _read(Path(source)) if is_file else list(source)
        self.name = name or (f"replay:{source}" if is_file else "replay")
        self._index: dict[tuple[str, ...], dict[tuple, list[str]]] = {}
        for record in _with_trajectories(raw):
            keys = tuple(k for k in KEYS if record.get(k) is not None)
            values = tuple(_typed(k, record[k]) for k in keys)
            self._index.setdefault(keys, {}).setdefault(values, []).append(_text(record))
        if not self._index:
            raise ConfigError(f"the replay source has no responses: {source if is_file else 'an empty list'}")
        self._order = sorted(self._index, key=lambda ks: (-len(ks), [KEYS.index(k) for k in ks]))

    def generate(self, requests: Sequence[Request]) -> list[str]:
        return [self._lookup(r) for r in requests]

    def _lookup(self, r: Request) -> str:
        for keys in self._order:
            hits = self._index[keys].get(tuple(getattr(r, k) for k in keys))
            if not hits:
                continue
            if "trajectory" not in keys:
                return hits[r.trajectory % len(hits)]
            if "turn" not in keys:
                return hits[(r.turn - 1) % len(hits)]
            return hits[-1]
        if self.on_missing == "empty":
            return ""
        raise PolicyError(f"{self.name}: no response for config={r.config!r} task={r.task!r} "
                          f"trajectory={r.trajectory} turn={r.turn}")


def _read(path: Path) -> list[Any]:
    if not path.is_file():
        raise ConfigError(f"no such replay file: {path}")
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".json":
        data = json.loads(text)
        data = data.get("responses", data) if isinstance(data, dict) else data
        if not isinstance(data, list):
            raise ConfigError(f"{path}: a JSON replay file holds a list of records (or {{'responses': [...]}})")
        return data
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            if n == len(text.splitlines()):
                break  # a last line cut off by a crash (a log still being written)
            raise ConfigError(f"{path}:{n}: not JSON ({e})") from e
    return records


def _with_trajectories(raw: list[Any]) -> list[dict[str, Any]]:
    """Records as dicts with their keys lifted from `info`; env logs (episode_id, no trajectory) get an index per
    task in the order their episodes first appear."""
    out, episodes = [], {}
    for item in raw:
        record = {"response": item} if isinstance(item, str) else dict(item)
        info = record.get("info") if isinstance(record.get("info"), dict) else {}
        for key in ("task", "turn"):
            if record.get(key) is None and info.get(key) is not None:
                record[key] = info[key]
        if record.get("trajectory") is None and record.get("episode_id") is not None:
            per_task = episodes.setdefault(record.get("task"), {})
            record["trajectory"] = per_task.setdefault(record["episode_id"], len(per_task))
        out.append(record)
    return out


def _typed(key: str, value: Any) -> Any:
    return int(value) if key in ("trajectory", "turn") else str(value)


def _text(record: dict[str, Any]) -> str:
    for field in TEXT_FIELDS:
        if isinstance(record.get(field), str):
            return record[field]
    messages = record.get("messages")
    if isinstance(messages, list):
        answers = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
        if answers and isinstance(answers[-1], str):
            return answers[-1]
    raise ConfigError(f"a replay record has no response text (one of {', '.join(TEXT_FIELDS)} or messages): "
                      f"{sorted(record)}")


@register_policy("replay")
def _from_spec(arg: str, **options: Any) -> Policy:
    """`replay:FILE`: a JSONL or JSON file of responses (see the module docstring); option `on_missing`."""
    return ReplayPolicy(arg, **options)
