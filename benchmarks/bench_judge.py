"""The judge's clock on a GPU: its fixed cross-process cost, and its agreement with `triton.testing.do_bench`.

    python benchmarks/bench_judge.py noop --n 300 --out DIR
    python benchmarks/bench_judge.py agreement --repeats 3 --out DIR
    python benchmarks/bench_judge.py hang --repeats 3 --out DIR

- noop: the judge's clock around a runner call that does nothing (the runner's stream waits for "go" and records
  "done" at once), with and without the launch gate: the fixed cost every timed call of either side carries.
- agreement: every genuine Triton solution of tests/solutions at full size, judged by a one-slot pool (the judge's
  speedup), against do_bench's speedup with each side in its own fresh process. The judge times every round on
  fresh input values and takes the median; so does this side: `repeats` value sets (seeds 1, 2, ...), one do_bench
  run of 200 ms each, the median of their medians. (Some kernels' runtimes depend on the values: the Triton
  conv_relu_pool solution reads 6.68-6.90 ms over 10 value sets in one process, its cuDNN reference 0.1 %; one value
  set against the judge's median of 10 was a 4 % difference that was the values, not the clock.) Prints a markdown
  table for benchmarks/RESULTS.md and writes JSON.
- hang: a level1/relu solution whose kernel never ends from its fifth call on
  (tests/solutions/faulty/relu_hangs_from_fifth_call.py), judged by a one-slot pool: the time from submission to
  its `timeout` verdict, and the next genuine job's time on the same slot against the same job's time before the
  hang (the GPU and the slot are free again once the verdict is in).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOL = ROOT / "tests" / "solutions"

DO_BENCH = r"""
import json, sys, statistics, torch, triton
sys.path.insert(0, {root!r})
from kernel_gym.tasks import loading
from kernel_gym.harness.integrity import pin_precision
from kernel_gym.tasks import load_task
pin_precision("cuda")
task = load_task({task!r})
module = loading.load_reference(task.source, task.sizes_for("cuda"))
torch.manual_seed(0)
init = list(module.get_init_inputs())
torch.manual_seed(0)
if {side!r} == "reference":
    model = module.Model(*init)
else:
    cand = loading.load_candidate(open({solution!r}).read(), __import__("pathlib").Path({tmp!r}))
    model = cand.ModelNew(*init)
dtype = getattr(torch, {dtype!r}) if {dtype!r} else None  # a precision's cast, as the runners make it
model = (model.to(dtype) if dtype else model).cuda().eval()
ms = []
for seed in range(1, {repeats} + 1):  # one value set per run, like the judge's fresh inputs per round
    torch.manual_seed(seed)
    with torch.device("cuda"):
        inputs = [v.cuda() if isinstance(v, torch.Tensor) else v for v in module.get_inputs()]
    if dtype:
        inputs = [v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]
    with torch.no_grad():
        ms.append(triton.testing.do_bench(lambda: model(*inputs), warmup=25, rep=200, return_mode="median"))
print(json.dumps({{"ms": statistics.median(ms)}}))
"""


def do_bench_ms(task: str, side: str, solution: Path, repeats: int, dtype: str | None = None) -> float:
    """do_bench's median ms of one side (`reference` or `candidate`) in a fresh process; `dtype` (a torch dtype name,
    a precision's) casts the model and the floating inputs as the runners do."""
    import tempfile

    script = DO_BENCH.format(root=str(ROOT), task=task, side=side, solution=str(solution),
                             tmp=tempfile.mkdtemp(prefix="db_"), repeats=repeats, dtype=dtype)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    line = next((x for x in reversed(run.stdout.splitlines()) if x.startswith("{")), None)
    if line is None:
        raise RuntimeError(run.stderr[-2000:])
    return float(json.loads(line)["ms"])


def section_noop(args: argparse.Namespace) -> dict:
    import torch

    from kernel_gym.judge.clock import CudaClock, fixed_cost
    from kernel_gym.judge.runners import RunnerProcess

    runner = RunnerProcess("cuda")
    runner.wait_ready()
    runner.request("begin", deadline=time.monotonic() + 60, stage="compile")
    out = {}
    for gate in (True, False):
        clock = CudaClock(torch.device("cuda"), gate=gate)
        clock.bind(runner, time.monotonic() + 60)
        fixed_cost(clock, runner, n=20)  # warm: the gate learns its length
        out["gated" if gate else "inline"] = fixed_cost(clock, runner, n=args.n)
    runner.stop()
    print("\n### The judge's fixed cross-process cost (no-op runner call)\n")
    print("| clock | median ms | p10 ms | p90 ms | calls |")
    print("|---|---|---|---|---|")
    for k, v in out.items():
        print(f"| {k} | {v['median_ms']:.4f} | {v['p10_ms']:.4f} | {v['p90_ms']:.4f} | {v['n']:.0f} |")
    return out


def agreement_row(pool, task_id: str, path: Path, repeats: int, *, backend: str = "triton",
                  precision: str | None = None, ref_ms: float | None = None) -> dict:
    """One solution's judge speedup against do_bench's (each do_bench side in its own fresh process); `ref_ms`: the
    reference's do_bench ms when already measured (one task, one precision: the same reference)."""
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task
    from kernel_gym.tasks.precision import dtype_of

    job = job_for(load_task(task_id), path.read_text(), backend=backend,
                  config=EvalConfig(device="cuda", precision=precision))
    result = pool.evaluate(job)
    if not result.correct:
        return {"task": task_id, "error": f"{result.outcome.value}: {result.message[:200]}"}
    dtype = dtype_of(precision)
    ref_ms = ref_ms if ref_ms is not None else do_bench_ms(task_id, "reference", path, repeats, dtype)
    cand_ms = do_bench_ms(task_id, "candidate", path, repeats, dtype)
    db = ref_ms / cand_ms
    return {"task": task_id, "judge_speedup": result.speedup, "do_bench_speedup": db,
            "judge_runtime_ms": result.timing.runtime_ms, "judge_baseline_ms": result.timing.baseline_ms,
            "do_bench_runtime_ms": cand_ms, "do_bench_baseline_ms": ref_ms,
            "diff_pct": 100 * (result.speedup / db - 1), "method": result.timing.method,
            "rounds": result.timing.trials, "timing_stage_ms": result.stage_ms.get("timing"),
            "resolution_ms": result.timing.resolution_ms,
            **{k: v for k, v in result.signals.items() if k.startswith("probe_") or k == "clock_fixed_ms"}}


def agreement_table(rows: list[dict]) -> str:
    """The markdown table of agreement rows (a row's "label", else its task, names it) and the summary line."""
    lines = ["| task | judge runtime / baseline ms | do_bench runtime / baseline ms | judge speedup | do_bench speedup "
             "| difference |", "|---|---|---|---|---|---|"]
    for r in rows:
        name = r.get("label", r["task"])
        if "error" in r:
            lines.append(f"| {name} | {r['error']} | | | | |")
            continue
        lines.append(f"| {name} | {r['judge_runtime_ms']:.4f} / {r['judge_baseline_ms']:.4f} | "
                     f"{r['do_bench_runtime_ms']:.4f} / {r['do_bench_baseline_ms']:.4f} | {r['judge_speedup']:.3f} | "
                     f"{r['do_bench_speedup']:.3f} | {r['diff_pct']:+.1f} % |")
    diffs = [abs(r["diff_pct"]) for r in rows if "diff_pct" in r]
    if diffs:
        lines.append(f"\nmedian |difference| {statistics.median(diffs):.1f} %, worst {max(diffs):.1f} %")
    return "\n".join(lines)


def section_agreement(args: argparse.Namespace) -> dict:
    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cuda")
    pool.warm_up()
    rows = []
    for path in sorted(SOL.glob("level*.py")):
        if args.only and path.stem not in args.only:
            continue
        rows.append(agreement_row(pool, path.stem.replace("_", "/", 1), path, args.repeats))
        print(json.dumps(rows[-1]), flush=True)
    pool.close()
    print("\n### Speedup agreement with do_bench (each do_bench side in its own process)\n")
    print(agreement_table(rows))
    return {"rows": rows}


def section_hang(args: argparse.Namespace) -> dict:
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.judge.pool import WorkerPool
    from kernel_gym.tasks import load_task

    task = load_task("level1/relu")
    genuine = (SOL / "level1_relu.py").read_text()
    hang = (SOL / "faulty" / "relu_hangs_from_fifth_call.py").read_text()

    def timed(code: str, seed: int) -> tuple[float, object]:
        t0 = time.monotonic()
        result = pool.evaluate(job_for(task, code, backend="triton", config=EvalConfig(device=args.device, seed=seed)))
        return time.monotonic() - t0, result

    pool = WorkerPool(args.device)
    pool.warm_up()
    timed(genuine, 0)  # Triton's JIT cache and the runners warm
    rows = []
    for i in range(args.repeats):
        before_s, before = timed(genuine, 10 + i)
        hang_s, hung = timed(hang, 20 + i)
        after_s, after = timed(genuine, 30 + i)
        rows.append({"hang_to_verdict_s": round(hang_s, 2), "hang_outcome": hung.outcome.value,
                     "recycled": hung.worker_recycled, "message": hung.message[:300],
                     "genuine_before_s": round(before_s, 2), "genuine_after_s": round(after_s, 2),
                     "after_outcome": after.outcome.value, "before_outcome": before.outcome.value})
        print(json.dumps(rows[-1]), flush=True)
    pool.close()
    print("\n### Hang to verdict (one-slot pool, level1/relu kernel spinning from its fifth call)\n")
    print("| run | verdict | submission to verdict s | next genuine job s (before the hang) |\n|---|---|---|---|")
    for i, r in enumerate(rows):
        print(f"| {i} | {r['hang_outcome']} | {r['hang_to_verdict_s']} | {r['genuine_after_s']} "
              f"({r['genuine_before_s']}) |")
    return {"rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("section", choices=("noop", "agreement", "hang"))
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3, help="agreement: input value sets; hang: repetitions")
    parser.add_argument("--only", nargs="*", default=None, help="agreement: these solution stems only")
    parser.add_argument("--device", default="cuda", help="hang: cpu runs it on the CPU backend (a check of the bench)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    data = {"noop": section_noop, "agreement": section_agreement, "hang": section_hang}[args.section](args)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"judge_{args.section}.json").write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
