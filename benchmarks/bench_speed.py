"""Evaluation speed against a stock serial harness, in one run (issue 7's benchmarks).

    python benchmarks/bench_speed.py compile    [--out DIR]                       # cold / cached compile times
    python benchmarks/bench_speed.py throughput --kind triton --n 64 --stock-sample 6 --workers 8 [--out DIR]
    python benchmarks/bench_speed.py throughput --kind cuda   --n 32 --stock-sample 2 --workers 8 [--out DIR]
    python benchmarks/bench_speed.py cv         [--repeats 5] [--timing-trials N] [--out DIR]   # speedup CV

Actions are distinct sources (a salt comment inside every kernel, so nothing is reused from a compile cache) of
the genuine solutions in tests/solutions/. The stock harness (benchmarks/stock_harness.py) evaluates one kernel per
fresh process as KernelBench does; because a stock CUDA evaluation takes about a minute, the stock side runs a
sample of `--stock-sample` actions serially and its throughput is that sample's mean time per action (the actions
are alike, so the sample's mean is representative; the table says how many were measured). Each section prints a
markdown table and writes JSON into --out.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOL = ROOT / "tests" / "solutions"
TRITON_SOLUTIONS = ["level1_relu", "level1_softmax", "level1_layernorm", "level1_sum_reduce", "level1_matmul",
                    "level2_gemm_relu", "level2_rowscale_softmax_residual", "level2_gemm_bias_gelu"]
CUDA_SOLUTION = SOL / "cuda" / "level1_relu.py"


def card() -> str:
    """The GPU's name, for the printed tables (the card a number came from goes with it)."""
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"


def salt_triton(code: str, tag: str) -> str:
    """A comment as the first line of every @triton.jit function body (Triton's cache key covers the source)."""
    lines = code.splitlines(keepends=True)
    firsts = sorted((node.body[0].lineno for node in ast.walk(ast.parse(code)) if isinstance(node, ast.FunctionDef)
                     and any("jit" in ast.unparse(d) for d in node.decorator_list)), reverse=True)
    for lineno in firsts:
        indent = re.match(r"\s*", lines[lineno - 1]).group(0)
        lines.insert(lineno - 1, f"{indent}# variant {tag}\n")
    return "".join(lines)


def salt_cuda(code: str, tag: str, threads: int) -> str:
    code = code.replace('cuda_source = r"""', f'cuda_source = r"""\n// variant {tag}', 1)
    return code.replace("int threads = 256;", f"int threads = {threads};")


def triton_actions(n: int) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        name = TRITON_SOLUTIONS[i % len(TRITON_SOLUTIONS)]
        out.append((name.replace("_", "/", 1), salt_triton((SOL / f"{name}.py").read_text(), f"{i}-{secrets.token_hex(4)}")))
    return out


def cuda_actions(n: int) -> list[tuple[str, str]]:
    code = CUDA_SOLUTION.read_text()
    return [("level1/relu", salt_cuda(code, f"{i}-{secrets.token_hex(4)}", (128, 256, 512)[i % 3])) for i in range(n)]


def ours(actions: list[tuple[str, str]], backend: str, workers: int) -> dict:
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.judge.local import LocalEvaluator
    from kernel_gym.tasks import load_task

    jobs = [job_for(load_task(t), code, backend=backend, config=EvalConfig(device="cuda", seed=i,
                                                                            compile_timeout_s=900))
            for i, (t, code) in enumerate(actions)]
    t0 = time.perf_counter()
    evaluator = LocalEvaluator("cuda", workers=workers)
    evaluator.pool.warm_up()
    startup = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = evaluator.evaluate_many(jobs)
    wall = time.perf_counter() - t0
    evaluator.close()
    stages = sorted({k for r in results for k in r.stage_ms})
    return {"workers": workers, "startup_s": round(startup, 2), "wall_s": round(wall, 2), "n": len(jobs),
            "per_action_s": round(wall / len(jobs), 3),
            "outcomes": dict(Counter(r.outcome.value for r in results)),
            "runners_replaced": sum(bool(getattr(r, "worker_recycled", False)) for r in results),
            "stage_median_ms": {s: round(statistics.median(r.stage_ms[s] for r in results if s in r.stage_ms), 1)
                                for s in stages},
            "speedups": [r.speedup for r in results]}


def stock(actions: list[tuple[str, str]], sample: int, trials: int = 100) -> dict:
    from kernel_gym.tasks import load_task

    tmp = Path(tempfile.mkdtemp(prefix="stock_bench_"))
    rows = []
    t0 = time.perf_counter()
    for i, (task_id, code) in enumerate(actions[:sample]):
        ref, sol = tmp / f"ref_{i}.py", tmp / f"sol_{i}.py"
        ref.write_text(load_task(task_id).source)
        sol.write_text(code)
        run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "stock_harness.py"), "--ref", str(ref),
                              "--solution", str(sol), "--trials", str(trials)], capture_output=True, text=True)
        line = next((x for x in reversed(run.stdout.splitlines()) if x.startswith("{")), None)
        rows.append(json.loads(line) if line else {"correct": False, "error": run.stderr[-500:]})
    wall = time.perf_counter() - t0
    return {"sample": len(rows), "wall_s": round(wall, 2), "per_action_s": round(wall / max(1, len(rows)), 3),
            "correct": sum(bool(r.get("correct")) for r in rows), "rows": rows}


def section_throughput(args: argparse.Namespace) -> dict:
    actions = triton_actions(args.n) if args.kind == "triton" else cuda_actions(args.n)
    backend = "triton" if args.kind == "triton" else "cuda"
    mine = ours(actions, backend, args.workers)
    base = stock(actions, args.stock_sample)
    projected = base["per_action_s"] * args.n
    ratio = projected / mine["wall_s"]
    print(f"\n### Throughput, {args.n} distinct {args.kind} actions ({card()})\n")
    print("| harness | actions measured | wall s | s per action | outcomes |")
    print("|---|---|---|---|---|")
    print(f"| stock serial (fresh process per kernel) | {base['sample']} | {base['wall_s']} | {base['per_action_s']} | "
          f"{base['correct']}/{base['sample']} correct |")
    print(f"| kernel-gym pool ({args.workers} workers, warm) | {mine['n']} | {mine['wall_s']} | {mine['per_action_s']} "
          f"| {mine['outcomes']} |")
    print(f"\nthroughput ratio (stock s/action x {args.n} / ours wall): **{ratio:.1f}x**; pool start-up "
          f"{mine['startup_s']} s (paid once per run); our per-stage medians (ms): {mine['stage_median_ms']}")
    return {"kind": args.kind, "card": card(), "ours": mine, "stock": base, "ratio": round(ratio, 2)}


def section_compile(args: argparse.Namespace) -> dict:
    import torch

    from kernel_gym import cuda_raw
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.judge.local import LocalEvaluator
    from kernel_gym.tasks import load_task

    task = load_task("level1/relu")
    out: dict = {}
    # stock: fresh process, stock load_inline into a fresh directory (the harness prints its import+build time)
    actions = cuda_actions(args.stock_builds)
    stock_rows = stock(actions, args.stock_builds, trials=10)["rows"]
    out["stock_cold_s"] = [r["phases"].get("import_compile_s") for r in stock_rows]
    # ours: a warm worker; the first build of the run also precompiles the header (once per machine and flags)
    evaluator = LocalEvaluator("cuda", workers=1)
    evaluator.pool.warm_up()
    cfg = EvalConfig(device="cuda", compile_timeout_s=900, timing_trials=5)

    def compile_s(code: str) -> float:
        r = evaluator.evaluate(job_for(task, code, backend="cuda", config=cfg))
        assert r.correct, r.message
        return round(r.stage_ms["compile"] / 1e3, 3)

    fresh = cuda_actions(args.cold_builds + 1)
    out["ours_first_with_pch_build_s"] = compile_s(fresh[0][1])
    out["ours_cold_s"] = [compile_s(code) for _, code in fresh[1:]]
    out["ours_cached_s"] = [compile_s(fresh[1][1]) for _ in range(3)]
    raw = (SOL / "cuda_raw" / "level1_relu.py").read_text()
    raw_cold = [raw.replace('SOURCE = r"""', f'SOURCE = r"""// {secrets.token_hex(6)}') for _ in range(3)]
    out["raw_stage_cold_s"] = [round(evaluator.evaluate(job_for(task, c, backend="cuda_raw", config=cfg)).stage_ms[
        "compile"] / 1e3, 3) for c in raw_cold]
    out["raw_stage_cached_s"] = [round(evaluator.evaluate(job_for(task, raw_cold[0], backend="cuda_raw", config=cfg))
                                       .stage_ms["compile"] / 1e3, 3) for _ in range(3)]
    evaluator.close()
    src = raw.split('r"""')[1].split('"""')[0]
    nvrtc = []
    for _ in range(3):
        t0 = time.perf_counter()
        cuda_raw.compile(f"// {secrets.token_hex(6)}\n" + src)
        nvrtc.append(round(time.perf_counter() - t0, 4))
    out["nvrtc_cold_s"] = nvrtc
    # same results: the stock-built and the fast-built extension of one source, on the same input
    ext_dir = Path(tempfile.mkdtemp(prefix="identity_"))
    from torch.utils.cpp_extension import load_inline

    from kernel_gym.judge import fast_build

    code = CUDA_SOLUTION.read_text()
    cu = code.split('cuda_source = r"""')[1].split('"""')[0]
    params = dict(cpp_sources="torch::Tensor relu_forward(torch::Tensor x);", cuda_sources=cu,
                  functions=["relu_forward"], extra_cuda_cflags=["-O3"], verbose=False)
    t0 = time.perf_counter()
    stock_mod = load_inline("identity_stock", build_directory=str(_mk(ext_dir / "stock")), **params)
    t_stock = time.perf_counter() - t0
    fast, changes = fast_build.fast_params(params)
    t0 = time.perf_counter()
    fast_mod = load_inline("identity_fast", build_directory=str(_mk(ext_dir / "fast")), **fast)
    t_fast = time.perf_counter() - t0
    x = torch.randn(1 << 24, device="cuda")
    out["identity"] = {"equal": bool(torch.equal(stock_mod.relu_forward(x), fast_mod.relu_forward(x))),
                       "stock_build_s": round(t_stock, 2), "fast_build_s": round(t_fast, 2),
                       "changes": changes}
    print(f"\n### Compile times, level1/relu CUDA action ({card()})\n")
    print("| path | seconds |\n|---|---|")
    print(f"| stock load_inline, cold (fresh process + fresh dir) | {out['stock_cold_s']} |")
    print(f"| kernel-gym load_inline, first build of the machine (incl. PCH) | {out['ours_first_with_pch_build_s']} |")
    print(f"| kernel-gym load_inline, cold (new source) | {out['ours_cold_s']} |")
    print(f"| kernel-gym load_inline, cached (resubmitted source) | {out['ours_cached_s']} |")
    print(f"| cuda_raw compile stage, cold | {out['raw_stage_cold_s']} |")
    print(f"| cuda_raw compile stage, cached | {out['raw_stage_cached_s']} |")
    print(f"| NVRTC alone (kernel_gym.cuda_raw.compile), cold | {out['nvrtc_cold_s']} |")
    print(f"\nidentity: {out['identity']}")
    return out


def _mk(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def section_cv(args: argparse.Namespace) -> dict:
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.judge.local import LocalEvaluator
    from kernel_gym.tasks import load_task

    names = ["level1_softmax", "level1_matmul", "level2_gemm_relu", "level1_layernorm"]
    evaluator = LocalEvaluator("cuda", workers=args.workers)
    evaluator.pool.warm_up()
    jobs, keys = [], []
    for name in names:
        task = load_task(name.replace("_", "/", 1))
        for r in range(args.repeats):
            jobs.append(job_for(task, (SOL / f"{name}.py").read_text(), backend="triton",
                                config=EvalConfig(device="cuda", seed=100 + r, timing_trials=args.timing_trials,
                                                  timing_max_trials=args.timing_max_trials,
                                                  launch_gate=not args.no_gate)))
            keys.append(name)
    results = evaluator.evaluate_many(jobs)  # concurrently: the per-GPU timing lock keeps measurements apart
    evaluator.close()
    rows = {}
    for name in names:
        rs = [r for k, r in zip(keys, results) if k == name]
        sp = [r.speedup for r in rs if r.speedup]
        rt = [r.timing.runtime_ms for r in rs if r.timing]
        rows[name] = {"runtime_ms": round(statistics.median(rt), 4) if rt else None, "speedups": sp,
                      "cv": round(statistics.pstdev(sp) / statistics.mean(sp), 4) if len(sp) > 1 else None,
                      "outcomes": [r.outcome.value for r in rs],
                      "per_job": [{"runtime_ms": r.timing.runtime_ms, "baseline_ms": r.timing.baseline_ms,
                                   "runtime_cv": r.timing.runtime_cv, "baseline_cv": r.timing.baseline_cv,
                                   "trials": r.timing.trials, "speedup_rel_se": r.timing.speedup_rel_se,
                                   "timing_stage_ms": r.stage_ms.get("timing"), "gate_ms": r.timing.gate_ms,
                                   "method": r.timing.method}
                                  for r in rs if r.timing],
                      "lock_wait_ms": [r.stage_ms.get("gpu_lock_wait") for r in rs]}
    print(f"\n### Speedup CV over {args.repeats} repeated evaluations ({args.workers} concurrent workers, "
          f"{'inline' if args.no_gate else 'launch gate'}, "
          f"{args.timing_trials or 'adaptive 30-300'} timed rounds per side, {card()})\n")
    print("| kernel | runtime ms | speedups | CV | rounds |\n|---|---|---|---|---|")
    for name, r in rows.items():
        sps = ", ".join(f"{s:.3f}" for s in r["speedups"])
        rounds = "/".join(str(j["trials"]) for j in r["per_job"])
        print(f"| {name} | {r['runtime_ms']} | {sps} | {100 * r['cv']:.2f} % | {rounds} |" if r["cv"] is not None
              else f"| {name} | - | {r['outcomes']} | - | - |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("section", choices=("compile", "throughput", "cv"))
    parser.add_argument("--kind", choices=("triton", "cuda"), default="triton")
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--stock-sample", type=int, default=4)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--stock-builds", type=int, default=2)
    parser.add_argument("--cold-builds", type=int, default=3)
    parser.add_argument("--timing-trials", type=int, default=None,
                        help="cv: timed rounds per side (default: 30, then adaptive up to 300; a number: fixed)")
    parser.add_argument("--timing-max-trials", type=int, default=None, help="cv: most timed rounds per side")
    parser.add_argument("--no-gate", action="store_true", help="cv: time without the launch gate (inline)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    result = {"compile": section_compile, "throughput": section_throughput, "cv": section_cv}[args.section](args)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        name = args.section + (f"_{args.kind}" if args.section == "throughput" else "") + (
            f"_{args.timing_trials}rounds" if args.section == "cv" and args.timing_trials else "")
        (Path(args.out) / f"{name}.json").write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
