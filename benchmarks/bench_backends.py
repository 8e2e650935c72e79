"""Kernel languages side by side on a GPU (issue 39): compile time per backend, and the judge's speedups against
`triton.testing.do_bench`, for each backend's genuine relu and bf16 GEMM.

    python benchmarks/bench_backends.py [--backends triton cuda helion cute_dsl tilelang] [--jobs 8]
                                        [--sections compile agreement] [--repeats 3] [--out DIR]
    python benchmarks/bench_backends.py --report DIR/backends.json   # the tables of a saved run again (no GPU)

- compile: for each solution, `--jobs` variants of it (a comment salted into every kernel's source, so that no cache
  keyed by the source serves one) sent at once to the machine's judge; `cold`: the first time the judge sees them (its
  caches, $KERNEL_GYM_CACHE included, start empty: this run starts a judge of its own unless --keep-caches; the first
  CUDA batch also builds the precompiled header), `warm`: the same variants again. Reported: the median over the
  jobs of the judge's `compile` stage (the candidate's import, ModelNew, its first call: Triton's JIT, load_inline's
  build, Helion's, CuTe DSL's and TileLang's compile at the first call) and of `compile_segments` (the part spent
  compiling, holding no GPU), the batch's wall time and its outcomes.
- agreement: each solution judged by a one-slot pool and timed by do_bench, each do_bench side in a fresh process
  (benchmarks/bench_judge.py's `agreement_row`: the same method as its `agreement` section; the goal is within 3 %).
  A task's reference is timed once per precision and shared by the backends.

A backend whose package is not installed here is reported as skipped (the package named). Prints markdown tables
and writes backends.json into --out (after the compile section, and at the end or when stopped).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
GOAL_PCT = 3.0  # issue 39: speedups within 3 % of do_bench's


@dataclass(frozen=True)
class Solution:
    """A backend's genuine solution of a task at a precision (None: the task's own)."""

    kind: str
    task: str
    path: Path
    precision: str | None = None


def _pair(relu: str, gemm: str) -> tuple[Solution, ...]:
    return (Solution("relu", "level1/relu", TESTS / relu), Solution("gemm_bf16", "level1/matmul", TESTS / gemm, "bf16"))


SOLUTIONS: dict[str, tuple[Solution, ...]] = {
    "triton": _pair("solutions/level1_relu.py", "solutions/bf16/matmul_triton.py"),
    "cuda": _pair("solutions/cuda/level1_relu.py", "solutions/bf16/matmul_cuda.py"),
    "helion": _pair("helion/solutions/level1_relu.py", "helion/solutions/level1_matmul_bf16.py"),
    "cute_dsl": _pair("cute_dsl/solutions/level1_relu.py", "cute_dsl/solutions/level1_matmul_bf16.py"),
    "tilelang": _pair("tilelang/solutions/level1_relu.py", "tilelang/solutions/level1_matmul_bf16.py"),
}
PACKAGES = {"triton": "triton", "cuda": "torch", "helion": "helion", "cute_dsl": "cutlass", "tilelang": "tilelang"}
AGREEMENT_FIRST = ["helion", "cute_dsl", "tilelang", "triton", "cuda"]  # never measured first (Triton's: RESULTS.md)
SALTED_DECORATORS = ("jit", "kernel", "prim_func")  # @triton.jit, @helion.kernel, @cute.kernel/jit, @T.prim_func


def missing(backend: str) -> str | None:
    """Why `backend` cannot run here (its package, or nvcc for load_inline), or None."""
    package = PACKAGES[backend]
    if importlib.util.find_spec(package) is None:
        return f"package {package!r} not installed"
    if backend == "cuda" and not (shutil.which("nvcc") or Path("/usr/local/cuda/bin/nvcc").exists()):
        return "no nvcc"
    return None


def salt(code: str, backend: str, tag: str) -> str:
    """`code` with a comment naming `tag` in every kernel's source: in the CUDA source before its first `__global__`,
    else as the first line of every function decorated with a jit/kernel/prim_func decorator (before the decorators
    of a decorated first statement)."""
    if backend == "cuda":
        return code.replace("__global__", f"// variant {tag}\n__global__", 1)
    lines = code.splitlines(keepends=True)
    firsts = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                any(name in ast.unparse(d) for name in SALTED_DECORATORS) for d in node.decorator_list):
            first = node.body[0]
            firsts.add(min([first.lineno] + [d.lineno for d in getattr(first, "decorator_list", [])]))
    for lineno in sorted(firsts, reverse=True):
        indent = re.match(r"\s*", lines[lineno - 1]).group(0)
        lines.insert(lineno - 1, f"{indent}# variant {tag}\n")
    return "".join(lines)


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def summarize(results: list, wall_s: float) -> dict:
    """A batch's outcomes and the medians of its jobs' compile stage and compile segments (ms)."""
    stage = [r.stage_ms["compile"] for r in results if "compile" in r.stage_ms]
    segments = [r.stage_ms["compile_segments"] for r in results if "compile_segments" in r.stage_ms]
    out = {"n": len(results), "wall_s": round(wall_s, 2), "outcomes": dict(Counter(r.outcome.value for r in results)),
           "compile_ms": _median(stage), "compile_ms_range": [min(stage), max(stage)] if stage else None,
           "compile_segments_ms": _median(segments)}
    wrong = next((r for r in results if r.outcome.value != "correct"), None)
    if wrong is not None:
        out["first_error"] = wrong.message[:300]
    return out


def compile_batches(evaluator, backend: str, sol: Solution, jobs: int, phases: list[str]) -> dict:
    """`jobs` salted variants of `sol` at once through `evaluator`, once per phase (the same variants each time)."""
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    task, code = load_task(sol.task), sol.path.read_text()
    variants = [salt(code, backend, f"{i}-{secrets.token_hex(4)}") for i in range(jobs)]
    out = {}
    for phase in phases:
        batch = [job_for(task, v, backend=backend, config=EvalConfig(
            device="cuda", precision=sol.precision, seed=i, compile_timeout_s=900, correctness_trials=1,
            timing_trials=5, timing_max_trials=5)) for i, v in enumerate(variants)]
        t0 = time.perf_counter()
        results = evaluator.evaluate_many(batch)
        out[phase] = summarize(results, time.perf_counter() - t0)
        print(json.dumps({"backend": backend, "solution": sol.kind, "phase": phase, **out[phase]}), flush=True)
    return out


def section_compile(backends: list[str], jobs: int, phases: list[str], keep_caches: bool, sink: dict) -> None:
    """Every available backend's solutions through one judge (of this run's own, with empty caches, unless
    `keep_caches`), stopped afterwards; each solution's batches go into sink[backend]["compile"] as they end."""
    from kernel_gym.judge.local import LocalEvaluator

    if not keep_caches:  # a judge of this run's own, started below with empty caches (its environment is ours)
        os.environ["KERNEL_GYM_JUDGE_DIR"] = tempfile.mkdtemp(prefix="kgj_backends_")
        os.environ["KERNEL_GYM_CACHE"] = tempfile.mkdtemp(prefix="kgcache_backends_")
    evaluator = LocalEvaluator("cuda", workers=jobs, shared=True)
    evaluator.pool.warm_up()
    try:
        for backend in backends:
            for sol in SOLUTIONS[backend]:
                sink[backend].setdefault("compile", {})[sol.kind] = compile_batches(evaluator, backend, sol, jobs,
                                                                                    phases)
    finally:
        evaluator.close()
        if not keep_caches:
            from kernel_gym.judge.client import stop_judge

            for sock in Path(os.environ["KERNEL_GYM_JUDGE_DIR"]).glob("*.sock"):
                stop_judge(sock)


def section_agreement(backends: list[str], repeats: int, rows: list[dict]) -> None:
    """bench_judge's agreement row for every solution of `backends` into `rows` (one reference timing per task and
    precision)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_judge import agreement_row

    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cuda")
    pool.warm_up()
    refs: dict[tuple[str, str | None], float] = {}
    try:
        for backend in sorted(backends, key=AGREEMENT_FIRST.index):  # a stage's bound cuts the ones measured before
            for sol in SOLUTIONS[backend]:
                row = agreement_row(pool, sol.task, sol.path, repeats, backend=backend, precision=sol.precision,
                                    ref_ms=refs.get((sol.task, sol.precision)))
                if "do_bench_baseline_ms" in row:
                    refs[(sol.task, sol.precision)] = row["do_bench_baseline_ms"]
                rows.append({"backend": backend, "solution": sol.kind, "label": f"{backend} {sol.kind}", **row})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        pool.close()


def _s(ms: float | None) -> str:
    return "—" if ms is None else f"{ms / 1e3:.2f}"


def compile_table(data: dict) -> list[str]:
    lines = [f"### Compile time per backend ({data.get('card', '?')}), median of {data.get('jobs', '?')} concurrent "
             "jobs on the machine's judge", "",
             "| backend | solution | cold: compile stage s | cold: compiling s | warm: compile stage s | "
             "warm: compiling s | cold batch wall s | outcomes (cold / warm) |", "|---|---|---|---|---|---|---|---|"]
    for backend, entry in data.get("backends", {}).items():
        if "skipped" in entry:
            lines.append(f"| {backend} | — | skipped: {entry['skipped']} | | | | | |")
            continue
        for kind, phases in entry.get("compile", {}).items():
            cold, warm = phases.get("cold", {}), phases.get("warm", {})
            lines.append(f"| {backend} | {kind} | {_s(cold.get('compile_ms'))} | {_s(cold.get('compile_segments_ms'))} "
                         f"| {_s(warm.get('compile_ms'))} | {_s(warm.get('compile_segments_ms'))} | "
                         f"{cold.get('wall_s', '—')} | {cold.get('outcomes', {})} / {warm.get('outcomes', {})} |")
    return lines


def agreement_lines(data: dict) -> list[str]:
    rows = data.get("agreement", [])
    lines = ["### Speedup agreement with do_bench (judge vs do_bench, each do_bench side in a fresh process)", "",
             "| backend | solution | judge speedup | do_bench speedup | difference | within 3 % |", "|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['backend']} | {r['solution']} | {r['error']} | | | |")
            continue
        ok = "yes" if abs(r["diff_pct"]) <= GOAL_PCT else "**no**"
        lines.append(f"| {r['backend']} | {r['solution']} | {r['judge_speedup']:.3f} | {r['do_bench_speedup']:.3f} | "
                     f"{r['diff_pct']:+.1f} % | {ok} |")
    diffs = [abs(r["diff_pct"]) for r in rows if "diff_pct" in r]
    if diffs:
        lines += ["", f"median |difference| {statistics.median(diffs):.1f} %, worst {max(diffs):.1f} %"]
    return lines


def report(data: dict) -> str:
    """The markdown tables of a run (its JSON as written by `main`)."""
    parts = []
    if any("compile" in e or "skipped" in e for e in data.get("backends", {}).values()):
        parts += compile_table(data) + [""]
    if "agreement" in data:
        parts += agreement_lines(data)
    return "\n".join(parts).rstrip() + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", nargs="+", default=list(SOLUTIONS), choices=list(SOLUTIONS))
    parser.add_argument("--sections", nargs="+", default=["compile", "agreement"], choices=["compile", "agreement"])
    parser.add_argument("--jobs", type=int, default=8, help="compile: variants sent to the judge at once")
    parser.add_argument("--phases", nargs="+", default=["cold", "warm"], choices=["cold", "warm"])
    parser.add_argument("--repeats", type=int, default=3, help="agreement: do_bench input value sets per side")
    parser.add_argument("--keep-caches", action="store_true", help="compile: the machine's judge and caches as they are")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--report", type=Path, default=None, help="print the tables of a saved backends.json and exit")
    return parser.parse_args(argv)


def save(data: dict, out: Path | None) -> str:
    """The report of `data` (printed: the stage's log has it); `data` into out/backends.json when given (one file:
    the device tool brings back at most 8)."""
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "backends.json").write_text(json.dumps(data, indent=1))
    return report(data)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report:
        print(report(json.loads(args.report.read_text())), end="")
        return 0
    import signal

    import torch

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stage's timeout: the judge stopped, what ran saved
    data: dict = {"card": torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU",
                  "torch": torch.__version__, "jobs": args.jobs, "backends": {}}
    ready = []
    for backend in args.backends:
        why = missing(backend)
        data["backends"][backend] = {"skipped": why} if why else {}
        if not why:
            ready.append(backend)
    try:
        if "compile" in args.sections and ready:
            section_compile(ready, args.jobs, args.phases, args.keep_caches, data["backends"])
            save(data, args.out)
        if "agreement" in args.sections:
            data["agreement"] = []
            section_agreement(ready, args.repeats, data["agreement"])
    finally:
        print("\n" + save(data, args.out), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
