"""A user's KernelBench checkout as tasks.

KernelBench keeps its reference programs in `KernelBench/level{1,2,3,4}/<N>_<Name>.py`. A file there gets the
id `kernelbench/<levelN>/<stem>` (`kernelbench/level1/19_ReLU`) and its level from the folder name. Three ways in:

* `load_task("kernelbench:PATH/level1/19_ReLU.py")`: one file, no index needed;
* `kernel-gym tasks import PATH`: indexes a checkout into `$KERNEL_GYM_CACHE/kernelbench.json` (default
  `~/.cache/kernel_gym/kernelbench.json`), after which `load_task("kernelbench/level1/19_ReLU")` resolves and
  `list_tasks(suite="kernelbench")` (or `"kernelbench/level2"`) lists them;
* `KERNEL_GYM_KERNELBENCH=PATH`: the checkout is scanned directly (it takes precedence over the index).

KernelBench files have no `KERNEL_GYM` dict, so they run at their own (GPU) sizes; on the CPU pass
`size={...}` (their size globals, e.g. `{"batch_size": 4, "dim": 256}`) to `gym.make` to shrink them.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from kernel_gym.errors import TaskFormatError, UnknownTaskError
from kernel_gym.tasks.task import Task, parse_task

log = logging.getLogger(__name__)

PREFIX = "kernelbench"
SCHEME = "kernelbench:"
ENV_CHECKOUT = "KERNEL_GYM_KERNELBENCH"
INDEX_VERSION = 1
_LEVEL_DIR = re.compile(r"level(\d+)$")


def cache_dir() -> Path:
    """kernel-gym's user cache: `$KERNEL_GYM_CACHE`, else `~/.cache/kernel_gym`."""
    return Path(os.environ.get("KERNEL_GYM_CACHE") or Path.home() / ".cache" / "kernel_gym")


def index_path() -> Path:
    """Where `kernel-gym tasks import` stores the index of the user's checkout."""
    return cache_dir() / "kernelbench.json"


def level_dirs(root: Path) -> list[Path]:
    """The `levelN` folders of a checkout given as its root, its `KernelBench/` folder, or one level folder."""
    root = Path(root).expanduser()
    if _LEVEL_DIR.match(root.name) and root.is_dir():
        return [root]
    for base in (root / "KernelBench", root):
        if base.is_dir():
            found = [d for d in base.iterdir() if d.is_dir() and _LEVEL_DIR.match(d.name)]
            if found:
                return sorted(found, key=lambda d: int(_LEVEL_DIR.match(d.name).group(1)))
    return []


def task_id(path: Path) -> str:
    """`kernelbench/<levelN>/<stem>` (or `kernelbench/<stem>` for a file outside a level folder)."""
    parent = path.parent.name
    return f"{PREFIX}/{parent}/{path.stem}" if _LEVEL_DIR.match(parent) else f"{PREFIX}/{path.stem}"


def _level(path: Path) -> int | None:
    m = _LEVEL_DIR.match(path.parent.name)
    return int(m.group(1)) if m else None


def _natural(path: Path) -> tuple:
    m = re.match(r"(\d+)", path.stem)
    return (int(m.group(1)) if m else 1 << 30, path.stem)


def scan(root: str | Path) -> dict[str, dict[str, Any]]:
    """Every task file of a checkout: id -> {"path", "level"}, in KernelBench's numeric order."""
    out: dict[str, dict[str, Any]] = {}
    for folder in level_dirs(Path(root)):
        for path in sorted(folder.glob("*.py"), key=_natural):
            if not path.name.startswith(("_", ".")):
                out[task_id(path)] = {"path": str(path.resolve()), "level": _level(path)}
    return out


def build_index(root: str | Path, estimate: bool = True) -> dict[str, Any]:
    """The index of a checkout: each file parsed (format errors are listed, not fatal) and, with `estimate`,
    traced on the meta device for its size globals and roofline baseline estimate."""
    from kernel_gym.tasks.roofline import MODEL, trace_source

    tasks: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for tid, entry in scan(root).items():
        path = Path(entry["path"])
        try:
            task = parse_task(tid, path.read_text(errors="replace"), path, entry["level"])
        except TaskFormatError as e:
            skipped[tid] = str(e)
            continue
        entry = {**entry, "dtype": task.dtype, "sizes": {"full": task.size_globals}}
        if estimate:
            try:
                trace = trace_source(task.source)
                entry.update(estimate_ms=round(trace.estimate_ms, 4), baseline_ms=round(trace.estimate_ms, 4),
                             baseline_ms_source="estimate")
            except Exception as e:  # noqa: BLE001 - third-party programs (e.g. level4 needs `transformers`)
                entry["estimate_error"] = f"{type(e).__name__}: {e}"[:300]
        tasks[tid] = entry
    return {"version": INDEX_VERSION, "root": str(Path(root).expanduser().resolve()), "roofline": MODEL,
            "tasks": tasks, "skipped": skipped}


def write_index(root: str | Path, out: str | Path | None = None, estimate: bool = True) -> tuple[Path, dict]:
    """Index a checkout and write the JSON (to the user cache unless `out` is given)."""
    if not level_dirs(Path(root)):
        raise TaskFormatError(f"{root}: no KernelBench level folders (expected KernelBench/level1, level2, ...)")
    data = build_index(root, estimate)
    target = Path(out) if out else index_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(target)
    return target, data


def read_index() -> dict[str, Any]:
    """The stored index (empty when none was imported)."""
    path = index_path()
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        log.warning("ignoring unreadable KernelBench index %s: %s", path, e)
        return {}


def index() -> dict[str, dict[str, Any]]:
    """id -> entry for the user's checkout: `$KERNEL_GYM_KERNELBENCH` scanned live, else the stored index."""
    checkout = os.environ.get(ENV_CHECKOUT)
    if checkout:
        return scan(checkout)
    return read_index().get("tasks", {})


def load_path(path: str | Path) -> Task:
    """`kernelbench:PATH`: one KernelBench file, given an id from its folder and name."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UnknownTaskError("task", f"{SCHEME}{path}", [])
    p = p.resolve()
    return parse_task(task_id(p), p.read_text(errors="replace"), p, _level(p))


def load_id(tid: str) -> Task:
    """`kernelbench/levelN/<stem>` through the index (or `$KERNEL_GYM_KERNELBENCH`)."""
    known = index()
    entry = known.get(tid)
    if entry is None or not Path(entry["path"]).is_file():
        err = UnknownTaskError("task", tid, list(known))
        if not known:
            err.args = (err.args[0] + f" (no KernelBench checkout is indexed: run `kernel-gym tasks import PATH` "
                        f"or set {ENV_CHECKOUT}=PATH)",)
        raise err
    path = Path(entry["path"])
    return parse_task(tid, path.read_text(errors="replace"), path, entry.get("level"))
