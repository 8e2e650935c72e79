"""Tasks: KernelBench-format reference programs, by suite id (`level1/relu`), KernelBench id or path.

Built-in suites live in `tasks/levelN/` (ids `levelN/<name>`) and `tasks/c2cuda/` (C→CUDA tasks, `.c` files read
by `c_task.py`, ids `c2cuda/<name>`); `tasks/manifest.json` gives each its level,
dtype, sizes, train/eval split and baseline time. A user's KernelBench checkout is reached as
`kernelbench:PATH/level1/19_ReLU.py`, or by id (`kernelbench/level1/19_ReLU`) once indexed with
`kernel-gym tasks import PATH` or pointed at with `KERNEL_GYM_KERNELBENCH=PATH` (see `kernelbench.py`).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from kernel_gym.errors import ConfigError, TaskFileNotFoundError, UnknownNameError, UnknownTaskError
from kernel_gym.paths import data_dir
from kernel_gym.tasks import kernelbench
from kernel_gym.tasks.task import Task, parse_task

__all__ = ["SPLITS", "Task", "in_split", "list_suites", "list_tasks", "load_task", "split_of", "tasks_dir"]

SPLITS = ("train", "eval")


def tasks_dir() -> Path:
    """The folder holding the built-in suites (inside the wheel, or the checkout's `tasks/`)."""
    return data_dir("tasks")


@cache
def _suite_index() -> dict[str, Path]:
    root = tasks_dir()
    index = {}
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.c")]):  # .c: C→CUDA tasks (c_task.py)
        rel = path.relative_to(root).with_suffix("")
        if any(part.startswith(("_", ".")) for part in rel.parts):
            continue
        index[rel.as_posix()] = path
    return index


def split_of(task_id: str) -> str | None:
    """A built-in task's split ("train" or "eval") as recorded in tasks/manifest.json (None for other tasks)."""
    from kernel_gym.tasks.manifest import assign_split, read_manifest

    if task_id not in _suite_index():
        return None
    entry = read_manifest().get("tasks", {}).get(task_id)
    return entry["split"] if entry and "split" in entry else assign_split(task_id)


def in_split(task_id: str, split: str) -> bool:
    """Whether a task belongs in data for `split`: "all" takes every task; "eval" only the built-in held-out tasks;
    "train" every task but those (tasks outside the built-in suites have no split, and count as training tasks)."""
    if split == "all":
        return True
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}: use one of {', '.join(SPLITS)} or 'all'")
    task_split = split_of(task_id)
    return task_split == "eval" if split == "eval" else task_split != "eval"


def list_tasks(suite: str | None = None, split: str | None = None) -> list[str]:
    """Ids of the built-in tasks, optionally of one suite (`"level1"`, `"level2"`) and/or split (`"train"`, `"eval"`).

    `suite="kernelbench"` (or `"kernelbench/level1"`, ...) lists the tasks of the indexed KernelBench checkout;
    those have no split, so `split=` leaves them out. An unknown suite raises `UnknownNameError` (with close matches).
    """
    if split is not None and split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    if suite is not None and (suite == kernelbench.PREFIX or suite.startswith(kernelbench.PREFIX + "/")):
        ids = [i for i in kernelbench.index() if i == suite or i.startswith(suite.rstrip("/") + "/")]
        return [] if split is not None else ids
    ids = list(_suite_index())
    if suite is not None:
        ids = [i for i in ids if i.startswith(suite.rstrip("/") + "/")]
        if not ids:
            raise UnknownNameError("suite", suite, list_suites())
    if split is not None:
        ids = [i for i in ids if split_of(i) == split]
    return ids


def list_suites() -> list[str]:
    """Names `list_tasks(suite=...)` accepts: the built-in suites (`level1`, `level2`, `c2cuda`) and `kernelbench`."""
    return sorted({i.split("/", 1)[0] for i in _suite_index()} | {kernelbench.PREFIX})


def _level_of(task_id: str) -> int | None:
    m = re.match(r"level(\d+)/", task_id)
    return int(m.group(1)) if m else None


def _load_c(path: Path, task_id: str | None = None) -> Task:
    from kernel_gym.tasks.c_task import load_c_task  # imports torch: only when a C task is loaded

    return load_c_task(path, task_id)


def load_task(id_or_path: str | Path) -> Task:
    """A task by suite id (`level1/relu`, `c2cuda/saxpy`), KernelBench id or `kernelbench:PATH`, or the path of a
    `.py` file (KernelBench format) or a `.c` file (a C→CUDA task, see `c_task.py`)."""
    key = str(id_or_path)
    index = _suite_index()
    if key in index:
        path = index[key]
        if path.suffix == ".c":
            return _load_c(path, key)
        return parse_task(key, path.read_text(), path, _level_of(key))
    if key.startswith(kernelbench.SCHEME):
        return kernelbench.load_path(key[len(kernelbench.SCHEME) :])
    if key.startswith(kernelbench.PREFIX + "/"):
        return kernelbench.load_id(key)
    path = Path(key).expanduser()
    if path.suffix == ".py" and path.is_file():
        return parse_task(str(path.resolve()), path.read_text(), path.resolve())
    if path.suffix == ".c" and path.is_file():
        return _load_c(path.resolve())
    if path.suffix in (".py", ".c"):
        raise TaskFileNotFoundError(str(path))
    raise UnknownTaskError("task", key, list(index))
