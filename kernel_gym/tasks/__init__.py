"""Tasks: KernelBench-format reference programs, by suite id (`level1/relu`) or by path."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from kernel_gym.errors import UnknownTaskError
from kernel_gym.paths import data_dir
from kernel_gym.tasks.task import Task, parse_task

__all__ = ["Task", "list_tasks", "load_task", "tasks_dir"]


def tasks_dir() -> Path:
    """The folder holding the built-in suites (inside the wheel, or the checkout's `tasks/`)."""
    return data_dir("tasks")


@cache
def _suite_index() -> dict[str, Path]:
    root = tasks_dir()
    index = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        if any(part.startswith(("_", ".")) for part in rel.parts):
            continue
        index[rel.as_posix()] = path
    return index


def list_tasks(suite: str | None = None) -> list[str]:
    """Ids of the built-in tasks, optionally of one suite (`"level1"`, `"level2"`, ...)."""
    ids = list(_suite_index())
    if suite is None:
        return ids
    return [i for i in ids if i.split("/", 1)[0] == suite]


def _level_of(task_id: str) -> int | None:
    m = re.match(r"level(\d+)/", task_id)
    return int(m.group(1)) if m else None


def load_task(id_or_path: str | Path) -> Task:
    """A task by suite id (`level1/relu`) or by the path of a KernelBench-format `.py` file."""
    key = str(id_or_path)
    index = _suite_index()
    if key in index:
        path = index[key]
        return parse_task(key, path.read_text(), path, _level_of(key))
    path = Path(key).expanduser()
    if path.suffix == ".py" and path.is_file():
        return parse_task(str(path.resolve()), path.read_text(), path.resolve())
    raise UnknownTaskError("task", key, list(index))
