"""Peak GPU memory of every task at full size, measured on a GPU beside the manifest's estimate (issue #40: every
task's judged run fits in 20 GB; kernel_gym/tasks/memory.py estimates it on the meta device).

    python benchmarks/task_memory.py [--suites level3 level2 level1 c2cuda] [--only IDS] [--budget-s 300] [--out DIR]
    python benchmarks/task_memory.py --report DIR/task_memory.json      # the table of a saved run (no GPU)

Per task, in this process, at the full sizes and at `full_alt` where the task has them (the larger counts): the timed
reference (`Baseline` if defined, else `Model`, as measure.py builds it) made on the GPU after `torch.manual_seed(0)`,
then one forward under no_grad: `torch.cuda.max_memory_allocated` gives the bytes of its parameters and inputs and the
forward's peak working memory (outputs included); the same model and inputs in float64 give the oracle's peak (the
judge's float64 oracle runs on the reference's runner, judge/oracle.py). These replace the estimate's traced parts in
memory.py's sum for a judged run (reference + candidate + judge's copies + oracle + the fixed CUDA contexts and the
clock's L2 buffer, whose constants stay estimates), reported as `judged_mib`, with the caching allocator's reserved
peak of both passes beside it. A task started before `--budget-s` runs to its end; the rest are listed as not
reached. JSON is written after every task.
"""

from __future__ import annotations

import argparse
import gc
import json
import signal
import sys
import time
from pathlib import Path

_MIB = 2**20
DEFAULT_SUITES = ["level3", "level2", "level1", "c2cuda"]


def ordered_tasks(suites: list[str], only: list[str] | None) -> list[str]:
    """The task ids to measure: `only` as given, else every task of `suites` in that order."""
    if only:
        return list(only)
    from kernel_gym.tasks import list_tasks

    return [t for suite in suites for t in list_tasks(suite)]


def judged_mib(params: int, inputs: int, outputs: int, forward_peak: int, oracle_peak: int | None,
               itemsize: int) -> float:
    """memory.py's judged-run sum with measured parts: reference = params + inputs + the forward's working memory
    (`forward_peak`, the allocated peak of the pass above the parameters and inputs), candidate = the same without
    the inputs, judge = 2 inputs + 2 outputs, oracle = its measured float64 peak (estimated by memory.py's scale
    when None), plus the fixed contexts."""
    from kernel_gym.tasks.memory import CONTEXT_MIB, L2_FLUSH_MIB

    reference = params + inputs + forward_peak
    oracle = oracle_peak if oracle_peak is not None else reference * 8 // itemsize
    total = reference + (params + forward_peak) + 2 * inputs + 2 * outputs + oracle
    return round(total / _MIB + 3 * CONTEXT_MIB + L2_FLUSH_MIB, 1)


def _bytes(tensors) -> int:
    import torch

    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def _pass(model, inputs) -> dict:
    """One no_grad forward: the bytes allocated before it, its allocated and reserved peaks, its outputs' bytes."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with torch.no_grad():
        out = model(*inputs)
    torch.cuda.synchronize()
    return {"base": base, "peak": torch.cuda.max_memory_allocated(), "reserved": torch.cuda.max_memory_reserved(),
            "outputs": _bytes(out if isinstance(out, (tuple, list)) else [out])}


def measure_at(source: str, sizes: dict | None) -> dict:
    """The measured parts of one task at `sizes` ({} = full) on the current CUDA device."""
    import torch

    from kernel_gym.tasks.loading import load_reference
    from kernel_gym.tasks.measure import build_timed

    gc.collect()
    torch.cuda.empty_cache()
    start = torch.cuda.memory_allocated()
    with torch.device("cuda"):
        model, inputs = build_timed(load_reference(source, dict(sizes or {})))
    model = model.eval()
    first = next((t for t in [*inputs, *model.parameters()] if isinstance(t, torch.Tensor) and t.is_floating_point()),
                 None)
    itemsize = first.element_size() if first is not None else 4
    del first  # (no reference may keep the native tensors alive into the float64 pass)
    native = _pass(model, inputs)
    row = {"params": _bytes([*model.parameters(), *model.buffers()]), "inputs": _bytes(inputs),
           "outputs": native["outputs"], "forward_peak": native["peak"] - native["base"], "itemsize": itemsize,
           "oracle_peak": None, "reserved_peak_mib": round(native["reserved"] / _MIB, 1)}
    try:  # the float64 oracle's pass: the same model and inputs in float64, the native ones freed
        model = model.to(torch.float64)
        inputs = [t.to(torch.float64) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
        wide = _pass(model, inputs)
        row["oracle_peak"] = wide["peak"] - start
        row["reserved_peak_mib"] = max(row["reserved_peak_mib"], round(wide["reserved"] / _MIB, 1))
    except Exception as exc:  # noqa: BLE001 - a reference that does not run in float64: the estimate's scale stands
        row["oracle_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    del model, inputs
    return row


def measure_task(task_id: str, manifest: dict) -> dict:
    """The task's measured judged-run MiB (the larger of full and full_alt) beside the manifest's estimate."""
    import torch

    from kernel_gym.tasks import load_task

    task = load_task(task_id)
    t0 = time.perf_counter()
    sizes = [None] + ([task.metadata["full_alt"]] if task.metadata.get("full_alt") else [])
    rows = []
    for s in sizes:
        try:
            rows.append(measure_at(task.source, s))
        except Exception as exc:  # noqa: BLE001 - out of memory (the finding) or a reference that fails: said, go on
            gc.collect()
            torch.cuda.empty_cache()
            kind = "oom" if isinstance(exc, torch.cuda.OutOfMemoryError) else type(exc).__name__
            return {"task": task_id, "error": f"{kind}: {str(exc)[:200]}", "seconds": round(time.perf_counter() - t0, 1)}
    judged = [judged_mib(r["params"], r["inputs"], r["outputs"], r["forward_peak"], r["oracle_peak"], r["itemsize"])
              for r in rows]
    worst = rows[judged.index(max(judged))]
    entry = manifest.get("tasks", {}).get(task_id, {})
    return {"task": task_id, "judged_mib": max(judged), "estimate_mib": entry.get("peak_mib_estimate"),
            "reference_mib": round((worst["params"] + worst["inputs"] + worst["forward_peak"]) / _MIB, 1),
            "oracle_mib": None if worst["oracle_peak"] is None else round(worst["oracle_peak"] / _MIB, 1),
            "reserved_peak_mib": max(r["reserved_peak_mib"] for r in rows),
            "oracle_error": worst.get("oracle_error"), "seconds": round(time.perf_counter() - t0, 1),
            "parts": rows}


def report(data: dict) -> str:
    """A markdown table of a run, the tasks over the bound first."""
    from kernel_gym.tasks.memory import MEMORY_BOUND_MIB

    rows = data.get("rows", [])
    over = [r for r in rows if (r.get("judged_mib") or 0) > MEMORY_BOUND_MIB]
    lines = [f"### Peak GPU memory of a judged run at full size, measured ({data.get('card', '?')})", "",
             f"{len(rows)} tasks measured, {len(over)} over the {MEMORY_BOUND_MIB} MiB bound"
             + (f"; not reached within the budget: {len(data['not_reached'])}" if data.get("not_reached") else ""), "",
             "| task | judged MiB (measured parts) | estimate MiB | reference MiB | float64 oracle MiB | "
             "allocator reserved MiB | s |", "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: -(r.get("judged_mib") or 0)):
        if "error" in r:
            lines.append(f"| {r['task']} | {r['error']} | | | | | {r.get('seconds', '')} |")
            continue
        flag = " **over**" if r["judged_mib"] > MEMORY_BOUND_MIB else ""
        lines.append(f"| {r['task']} | {r['judged_mib']}{flag} | {r.get('estimate_mib')} | {r['reference_mib']} | "
                     f"{r['oracle_mib'] if r['oracle_mib'] is not None else 'no float64'} | "
                     f"{r['reserved_peak_mib']} | {r['seconds']} |")
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", nargs="+", default=DEFAULT_SUITES)
    parser.add_argument("--only", nargs="*", default=None, help="task ids (default: every task of --suites)")
    parser.add_argument("--budget-s", type=float, default=300.0, help="no task is started after this many seconds")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--report", type=Path, default=None, help="print the table of a saved task_memory.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:
        print(report(json.loads(args.report.read_text())), end="")
        return 0
    import torch

    from kernel_gym.tasks.manifest import read_manifest

    if not torch.cuda.is_available():
        print("task_memory: no CUDA device here; run this on the GPU machine", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stage's timeout: what was measured is saved
    manifest, tasks = read_manifest(), ordered_tasks(args.suites, args.only)
    data = {"card": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": [], "not_reached": []}
    t0 = time.perf_counter()
    try:
        for i, task_id in enumerate(tasks):
            if time.perf_counter() - t0 > args.budget_s:
                data["not_reached"] = tasks[i:]
                break
            data["rows"].append(measure_task(task_id, manifest))
            print(json.dumps({k: v for k, v in data["rows"][-1].items() if k != "parts"}), flush=True)
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / "task_memory.json").write_text(json.dumps(data, indent=1))
    finally:
        text = report(data)
        print("\n" + text, end="")
        if args.out:  # (the table is in the log: one file back)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "task_memory.json").write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
