"""Measure every task's reference on the GPU and write the baselines into a manifest.

    python -m kernel_gym.tasks.measure --out tasks/manifest.json            # the built-in suites
    python -m kernel_gym.tasks.measure --out DIR/manifest.json              # a generated suite (entries with "file")
    python -m kernel_gym.tasks.measure --only level1/relu level2/gemm_relu  # a few tasks
    python -m kernel_gym.tasks.measure --only level3/... --baseline eager compile [--missing]

Method (the harness's, so manifest and env agree): the reference at its full sizes, built after
`torch.manual_seed(0)` with parameters and inputs created on the device, fp32 with TF32 off (`torch.backends.cuda.matmul.allow_tf32` and
`torch.backends.cudnn.allow_tf32` both False, restored afterwards), `warmup` untimed calls, then `repeats` calls
each after an L2 flush, timed with CUDA events around a whole-device synchronize behind the launch gate
(`kernel_gym.harness.timing.CudaTimer`: the in-process timer, fit for the trusted reference alone; the env times both
sides through the judge, kernel_gym/judge/clock.py); the median is the baseline. Exit code 1 when a task is
under `--min-ms` (eager).

`--baseline compile` times `torch.compile(model)` (default mode) the same way, its first warm-up call compiling, and
records `baseline_compile_ms` (and `baseline_compile_alt_ms`) with `compile_measured_on`/`compile_measured_with`
beside the eager `baseline_ms`, which it leaves as it is (CUDA Agent reports speedups against torch.compile; issue
#40). `--missing` skips what the manifest already holds measured on this device.

What is timed is what the env's `speedup` is measured against (`JudgeRun.timed_model` in kernel_gym/judge/run.py):
the program's `Baseline` when it defines one (a C task's PyTorch baseline, docs/c2cuda.md; its entry then records
`"baseline_of": "Baseline"`), else `Model` (for a C task without a baseline, the C reference itself).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MIN_MS = 0.1  # a reference faster than this is dominated by launch overhead and timer noise


@contextlib.contextmanager
def full_fp32() -> Iterator[None]:
    """TF32 off for matmul and cuDNN inside the block (fp32 tasks are judged against full-precision references)."""
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def timed_class(module: Any) -> str:
    """The class the harness times a candidate against: "Baseline" when the program defines one, else "Model"."""
    return "Baseline" if hasattr(module, "Baseline") else "Model"


def baseline_of(source: str) -> str:
    """`timed_class` of a reference source (executes it at its full sizes; no model or inputs are built)."""
    from kernel_gym.tasks.loading import load_reference

    return timed_class(load_reference(source, {}))


def build_timed(module: Any, seed: int = 0) -> tuple[Any, list[Any]]:
    """The timed module and its inputs (on the current device): `build` for `Model`; for a `Baseline`, as the
    runner's `timed_reference()` does, `Baseline(*get_init_inputs())` after `torch.manual_seed(seed)`."""
    import torch

    from kernel_gym.tasks.roofline import build

    if timed_class(module) == "Model":
        return build(module, seed)
    torch.manual_seed(seed)
    init = list(module.get_init_inputs())
    torch.manual_seed(seed)
    model = module.Baseline(*init)
    return model, list(module.get_inputs())


def time_reference(source: str, sizes: dict[str, Any] | None = None, *, device: str = "cuda", warmup: int = 3,
                   repeats: int = 20, compile: bool = False) -> float:
    """Median milliseconds of the timed reference's forward (`Baseline` if defined, else `Model`) at `sizes`
    ({} = full) on `device`, TF32 off; with `compile`, of `torch.compile(model)` (at least one warm-up call: the one
    that compiles)."""
    import torch

    from kernel_gym.harness.timing import make_timer
    from kernel_gym.tasks.loading import load_reference

    dev = torch.device(device)
    with dev:  # parameters and inputs made on the device: the same shapes and distributions, no 1 GiB host copies
        module = load_reference(source, dict(sizes or {}))
        model, inputs = build_timed(module)
    timer = make_timer(dev)
    forward = torch.compile(model) if compile else model
    samples = []
    try:
        with full_fp32(), torch.no_grad():  # (inductor reads the TF32 flags when it compiles: inside, so off)
            for _ in range(max(warmup, 1) if compile else warmup):
                forward(*inputs)
            for _ in range(repeats):
                timer.flush()
                sample, _ = timer.time(lambda: forward(*inputs))
                samples.append(sample.ms)
    finally:
        model = forward = inputs = timer = None  # drop the references before releasing the cached blocks
        if compile:
            torch._dynamo.reset()  # its graphs (and their buffers) go with this task
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return statistics.median(samples)


def _targets(manifest_path: Path, data: dict[str, Any], only: list[str] | None) -> list[tuple[str, str, dict]]:
    """(id, source, full_alt sizes) for every entry to measure: a "file" entry is read next to the manifest."""
    from kernel_gym.tasks import load_task
    from kernel_gym.tasks.task import parse_task

    out = []
    for tid, entry in data.get("tasks", {}).items():
        if only and tid not in only:
            continue
        if "file" in entry:
            path = manifest_path.parent / entry["file"]
            task = parse_task(tid, path.read_text(), path)
        else:
            task = load_task(tid)
        out.append((tid, task.source, dict(task.metadata.get("full_alt") or {})))
    return out


def _done(entry: dict[str, Any], baseline: str, device: str) -> bool:
    """Whether `entry` already holds `baseline` ("eager" or "compile") measured on `device` (a GPU's name)."""
    if baseline == "eager":
        return entry.get("baseline_ms_source") == "measured" and entry.get("measured_on") == device
    return "baseline_compile_ms" in entry and entry.get("compile_measured_on") == device


def _measure_eager(entry: dict[str, Any], source: str, full_alt: dict, args: argparse.Namespace, name: str) -> float:
    import torch

    ms = time_reference(source, device=args.device, warmup=args.warmup, repeats=args.repeats)
    entry.update(baseline_ms=round(ms, 4), baseline_ms_source="measured", measured_on=name,
                 measured_with=f"torch {torch.__version__}, TF32 off, median of {args.repeats}, L2 flushed, "
                               "launch gate")
    entry.pop("baseline_of", None)
    if baseline_of(source) == "Baseline":
        entry["baseline_of"] = "Baseline"
    if full_alt and not args.no_alt:
        entry["baseline_alt_ms"] = round(time_reference(source, full_alt, device=args.device, warmup=args.warmup,
                                                        repeats=args.repeats), 4)
    return ms


def _measure_compiled(entry: dict[str, Any], source: str, full_alt: dict, args: argparse.Namespace,
                      name: str) -> float:
    import torch

    def timed(sizes: dict | None) -> float:
        return time_reference(source, sizes, device=args.device, warmup=args.warmup, repeats=args.repeats,
                              compile=True)

    ms = timed(None)
    entry.update(baseline_compile_ms=round(ms, 4), compile_measured_on=name,
                 compile_measured_with=f"torch {torch.__version__}, torch.compile (default mode), TF32 off, median "
                                       f"of {args.repeats} after {max(args.warmup, 1)} warm-up calls (the first "
                                       "compiles), L2 flushed, launch gate")
    if full_alt and not args.no_alt:
        entry["baseline_compile_alt_ms"] = round(timed(full_alt), 4)
    return ms


def main(argv: list[str] | None = None) -> int:
    import torch

    from kernel_gym.tasks.manifest import build_manifest, default_path, write_manifest

    parser = argparse.ArgumentParser(prog="python -m kernel_gym.tasks.measure", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=None, help="manifest to update (default: tasks/manifest.json)")
    parser.add_argument("--only", nargs="*", default=None, help="task ids (default: every entry)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--no-alt", action="store_true", help="skip timing the full_alt sizes")
    parser.add_argument("--min-ms", type=float, default=MIN_MS)
    parser.add_argument("--baseline", nargs="+", default=["eager"], choices=["eager", "compile"],
                        help="what to time: the eager reference (baseline_ms), torch.compile'd (baseline_compile_ms)")
    parser.add_argument("--missing", action="store_true", help="skip what the manifest already holds from this device")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("measure: no CUDA device here; run this on the GPU machine", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_path()
    data = json.loads(out.read_text()) if out.is_file() else {}
    if not data:
        data = build_manifest()
    name = torch.cuda.get_device_name(torch.device(args.device)) if args.device.startswith("cuda") else args.device
    slow = []
    for tid, source, full_alt in _targets(out, data, args.only):
        entry = data["tasks"][tid]
        todo = [b for b in args.baseline if not (args.missing and _done(entry, b, name))]
        line = f"{tid:55}"
        if "eager" in todo:
            ms = _measure_eager(entry, source, full_alt, args, name)
            line += f" measured {ms:9.4f} ms   estimate {entry.get('estimate_ms', float('nan')):9.4f} ms"
            if ms < args.min_ms:
                slow.append(tid)
                line += "  < min"
        if "compile" in todo:
            line += f"   torch.compile {_measure_compiled(entry, source, full_alt, args, name):9.4f} ms"
        print(line if todo else f"{line} already measured on {name}", flush=True)
        write_manifest(data, out)  # after every task: a crash keeps what was measured
    print(f"wrote {out}" + (f"; {len(slow)} under {args.min_ms} ms: {', '.join(slow)}" if slow else ""))
    return 1 if slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
