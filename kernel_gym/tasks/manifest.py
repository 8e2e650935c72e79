"""The suite manifest, `tasks/manifest.json`: per task its level, dtype, sizes, train/eval split and baseline time.

    python -m kernel_gym.tasks.manifest [--out tasks/manifest.json]     # (re)build, baselines estimated
    python -m kernel_gym.tasks.manifest --only level3                   # those entries only, the rest untouched
    python -m kernel_gym.tasks.measure  [--out tasks/manifest.json]     # on a GPU: replace them by measurements

A baseline is either `"baseline_ms_source": "measured"` (CUDA events on an H200, see measure.py) or
`"estimate"` (the roofline model in roofline.py); a measured entry may also hold `baseline_compile_ms`, the
torch.compile'd reference (`measure.py --baseline compile`). Rebuilding keeps measured baselines of unchanged tasks.
A task whose dtype is bf16 or fp16 (level 3: bf16) also records `native_precision` ("bf16"), the precision it
runs at unless `precision=` says otherwise; a task of a suite in MEMORY_SUITES (levels 1-3) records
`peak_mib_estimate` (memory.py: the judged run's memory at full size) with `peak_mib_source` "estimate" until a GPU
measures it.

The split is a pure function of the id: a task is in "eval" when sha256(SPLIT_SALT + id) is 0 modulo 5,
so about 20 % of the tasks are held out, and adding or removing tasks never moves another task across splits.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

MANIFEST_VERSION = 1
SPLIT_SALT = "kernel-gym/split/v1:"
EVAL_MODULUS = 5  # 1 in 5 tasks is "eval"
_PRECISION_KEYS = ("precisions", "precision_rel_l2", "precision_cpu_missing")  # kernel_gym/tasks/precisions.py
MEMORY_SUITES = ("level1", "level2", "level3")  # sized for the 20 GB bound (issue #40): entries record peak_mib_estimate
_MEASURED_KEYS = ("baseline_ms", "baseline_ms_source", "baseline_alt_ms", "measured_on", "measured_with", "baseline_of",
                  "baseline_compile_ms", "baseline_compile_alt_ms", "compile_measured_on", "compile_measured_with")


def assign_split(task_id: str) -> str:
    """"eval" for ~1 in 5 ids (a stable hash of the id), "train" for the rest."""
    h = int(hashlib.sha256((SPLIT_SALT + task_id).encode()).hexdigest()[:12], 16)
    return "eval" if h % EVAL_MODULUS == 0 else "train"


def source_digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def default_path() -> Path:
    from kernel_gym.tasks import tasks_dir

    return tasks_dir() / "manifest.json"


_CACHE: dict[Path, tuple[float, dict]] = {}


def read_manifest(path: str | Path | None = None) -> dict[str, Any]:
    """The manifest as a dict ({} when there is none); re-read when the file changes."""
    p = Path(path) if path else default_path()
    try:
        mtime = p.stat().st_mtime
    except OSError:
        return {}
    cached = _CACHE.get(p)
    if cached and cached[0] == mtime:
        return cached[1]
    data = json.loads(p.read_text())
    _CACHE[p] = (mtime, data)
    return data


def task_entry(task_id: str, source: str, level: int | None, metadata: dict, size_globals: dict) -> dict[str, Any]:
    """One manifest entry: static facts plus the roofline trace at full (and full_alt) sizes."""
    from kernel_gym.tasks.memory import peak_mib_estimate  # torch: only when building, not for split lookups
    from kernel_gym.tasks.precision import PRECISIONS
    from kernel_gym.tasks.roofline import trace_source

    full = trace_source(source)
    entry: dict[str, Any] = {
        "level": level,
        "dtype": str(metadata.get("dtype", "float32")),
        "split": assign_split(task_id),
        "sizes": {"full": size_globals, **{k: metadata[k] for k in ("cpu", "alt", "full_alt") if k in metadata}},
        "ops": list(full.signature),
        "input_mib": round(full.input_bytes / 2**20, 1),
        "estimate_ms": round(full.estimate_ms, 4),
    }
    if metadata.get("full_alt"):
        entry["estimate_alt_ms"] = round(trace_source(source, metadata["full_alt"]).estimate_ms, 4)
    native = next((p for p, d in PRECISIONS.items() if d == entry["dtype"]), None)
    if native not in (None, "fp32"):  # (fp32 tasks, levels 1 and 2, keep their entries as they were)
        entry["native_precision"] = native
    if task_id.split("/", 1)[0] in MEMORY_SUITES:
        entry.update(peak_mib_estimate=peak_mib_estimate(source, metadata.get("full_alt")), peak_mib_source="estimate")
    entry.update(baseline_ms=entry["estimate_ms"], baseline_ms_source="estimate", source_sha256=source_digest(source))
    return entry


def build_manifest(previous: dict[str, Any] | None = None, only: list[str] | None = None) -> dict[str, Any]:
    """The manifest of every built-in task; measured baselines in `previous` survive for unchanged sources.
    With `only` (task ids or suite names such as "level3"), just those entries are rebuilt and every other entry of
    `previous` is kept exactly as it was (a suite's tasks added without touching the others)."""
    from kernel_gym.tasks import list_tasks
    from kernel_gym.tasks.roofline import MODEL

    old = (previous or {}).get("tasks", {})
    tasks = {}
    for tid in list_tasks():
        if only is None or tid in only or tid.split("/", 1)[0] in only or tid not in old:
            tasks[tid] = _rebuilt(tid, old.get(tid, {}))
        else:
            tasks[tid] = old[tid]
    return {
        "version": MANIFEST_VERSION,
        "about": "built-in kernel-gym tasks; rebuild with `python -m kernel_gym.tasks.manifest`, measure baselines "
        "on an H200 with `python -m kernel_gym.tasks.measure`",
        "split_rule": f"eval iff int(sha256('{SPLIT_SALT}' + id)[:12], 16) % {EVAL_MODULUS} == 0",
        "roofline": MODEL,
        "tasks": tasks,
    }


def _rebuilt(tid: str, prev: dict[str, Any]) -> dict[str, Any]:
    """A task's fresh entry, with `prev`'s measurements (baseline, precisions) where its source is unchanged."""
    from kernel_gym.tasks import load_task

    task = load_task(tid)
    entry = task_entry(tid, task.source, task.level, task.metadata, task.size_globals)
    if prev.get("baseline_ms_source") == "measured" and prev.get("source_sha256") == entry["source_sha256"]:
        entry.update({k: prev[k] for k in _MEASURED_KEYS if k in prev})
    if prev.get("source_sha256") == entry["source_sha256"]:  # the precisions measured for this source
        entry.update({k: prev[k] for k in _PRECISION_KEYS if k in prev})
    return entry


def write_manifest(data: dict[str, Any], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(p)
    return p


def baseline(entry: dict[str, Any]) -> tuple[float | None, str | None]:
    """(baseline_ms, "measured" | "estimate") of a manifest entry."""
    return entry.get("baseline_ms"), entry.get("baseline_ms_source")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernel_gym.tasks.manifest", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=None, help="the manifest to write (default: tasks/manifest.json)")
    parser.add_argument("--only", nargs="*", default=None,
                        help="rebuild only these task ids or suites (e.g. level3); every other entry stays as it is")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else default_path()
    previous = json.loads(out.read_text()) if out.is_file() else None
    data = build_manifest(previous, only=args.only)
    write_manifest(data, out)
    splits = [e["split"] for e in data["tasks"].values()]
    print(f"wrote {out}: {len(splits)} tasks, {splits.count('train')} train, {splits.count('eval')} eval")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
