"""Many clients, one judge: N client processes evaluate the same genuine kernels at once through the machine's judge
(as N sub-envs of a vector env, or N OpenRLHF agent workers, would), against N = 1 in the same run.

    python benchmarks/bench_clients.py --clients 1 8 --repeats 5 --device cuda --out DIR

For each N: every client evaluates every genuine Triton solution of tests/solutions `repeats` times; reported per
kernel: the speedup's CV over all N x repeats evaluations, and over all: the median and worst queue wait, the
median and worst wait for the GPU before timing, the number of timings that ran without exclusivity (must be 0),
and the wall time. A markdown table for benchmarks/RESULTS.md is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOL = ROOT / "tests" / "solutions"

CLIENT = r"""
import json, sys, time
sys.path.insert(0, {root!r})
from kernel_gym.judge.local import LocalEvaluator
from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.tasks import load_task
names, repeats, device = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
extra = json.loads(sys.argv[4])
ev = LocalEvaluator(device, workers=1, shared=True)
jobs = []
for r in range(repeats):
    for name in names:
        task = load_task(name.replace("_", "/", 1))
        code = open({sol!r} + "/" + name + ".py").read()
        jobs.append((name, job_for(task, code, backend="triton", config=EvalConfig(device=device, seed=r, **extra))))
for name, job in jobs:  # one at a time per client, as an env steps
    r = ev.evaluate(job)
    print(json.dumps({{"kernel": name, "outcome": r.outcome.value, "speedup": r.speedup,
                      "message": r.message[:4000] if r.outcome.value != "correct" else "",
                      "queue_wait_ms": r.stage_ms.get("judge_queue_wait"), "gpu_wait_ms": r.stage_ms.get("gpu_lock_wait"),
                      "not_exclusive": r.signals.get("timing_not_exclusive", 0.0), "timing_ms": r.stage_ms.get("timing"),
                      "after_ms": r.stage_ms.get("after_timing_check"), "rounds": r.timing.trials if r.timing else None,
                      **{{k + "_ms": r.stage_ms.get("timing_" + k) for k in ("setup", "inputs", "calls", "checks")}},
                      "gate_ms": r.timing.gate_ms if r.timing else None, "fixed_ms": r.signals.get("clock_fixed_ms"),
                      "resolution_ms": r.timing.resolution_ms if r.timing else None,
                      "retakes": r.signals.get("gate_retakes", 0.0),
                      "cv": r.timing.runtime_cv if r.timing else None,
                      "runtime_ms": r.timing.runtime_ms if r.timing else None,
                      "baseline_ms": r.timing.baseline_ms if r.timing else None,
                      "baseline_cv": r.timing.baseline_cv if r.timing else None, "t_done": time.time()}}), flush=True)
ev.close()
"""


def run_clients(n: int, names: list[str], repeats: int, device: str, config: dict | None = None) -> dict:
    """N client processes at once; each writes a line per evaluation to its own file as it goes, so a run cut short
    (the stage's timeout) still reports what was measured. The clients are killed if this process is stopped."""
    script = CLIENT.format(root=str(ROOT), sol=str(SOL))
    folder = Path(tempfile.mkdtemp(prefix=f"clients_{n}_"))
    t0 = time.perf_counter()
    procs = []
    smi = watch_gpu(folder / "gpu.csv") if device == "cuda" else None
    try:
        for i in range(n):
            with open(folder / f"client_{i}.jsonl", "w") as out:
                procs.append(subprocess.Popen([sys.executable, "-c", script, json.dumps(names), str(repeats), device,
                                               json.dumps(config or {})], stdout=out, text=True))
        for p in procs:
            p.wait()
    except SystemExit:  # stopped (the stage's timeout): report what the clients wrote so far
        interrupted = True
    else:
        interrupted = False
    finally:
        for p in procs + ([smi] if smi else []):
            if p.poll() is None:
                p.kill()
        wall = time.perf_counter() - t0
    rows = [json.loads(line) for f in sorted(folder.glob("client_*.jsonl")) for line in f.read_text().splitlines()
            if line.startswith("{")]
    gpu = gpu_samples(folder / "gpu.csv")
    for row in rows:  # the GPU's clocks over the evaluation's timing stage (its end is when the client got it)
        end = row.get("t_done") or 0.0
        start = end - ((row.get("timing_ms") or 0.0) + 50.0) / 1e3
        during = [g for g in gpu if start <= g["t"] <= end]
        if during:
            row["sm_mhz"] = [min(g["sm"] for g in during), max(g["sm"] for g in during)]
            row["mem_mhz"] = [min(g["mem"] for g in during), max(g["mem"] for g in during)]
            row["temp_c"] = max(g["temp"] for g in during)
            row["throttle"] = sorted({g["throttle"] for g in during})
    out = {**summarize(n, rows, wall), "interrupted": interrupted}
    if gpu:
        out["gpu"] = {"samples": len(gpu), "sm_mhz": [min(g["sm"] for g in gpu), max(g["sm"] for g in gpu)],
                      "mem_mhz": [min(g["mem"] for g in gpu), max(g["mem"] for g in gpu)],
                      "temp_c": [min(g["temp"] for g in gpu), max(g["temp"] for g in gpu)],
                      "power_w": [min(g["power"] for g in gpu), max(g["power"] for g in gpu)],
                      "throttle": sorted({g["throttle"] for g in gpu})}
    return out


GPU_FIELDS = "timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active"


def watch_gpu(path: Path) -> subprocess.Popen | None:
    """nvidia-smi samples the GPU's clocks, temperature, power and throttle reasons every 50 ms into `path` (a
    diagnostic beside the judge's readings: is a stray evaluation one the GPU ran at other clocks?)."""
    try:
        return subprocess.Popen(["nvidia-smi", f"--query-gpu={GPU_FIELDS}", "--format=csv,noheader,nounits",
                                 "-lms", "50", "-i", "0"], stdout=open(path, "w"), stderr=subprocess.DEVNULL)
    except OSError:
        return None


def gpu_samples(path: Path) -> list[dict]:
    from datetime import datetime

    rows = []
    for line in path.read_text().splitlines() if path.exists() else []:
        parts = [p.strip() for p in line.split(",")]
        try:
            t = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            rows.append({"t": t, "sm": float(parts[1]), "mem": float(parts[2]), "temp": float(parts[3]),
                         "power": float(parts[4]), "throttle": parts[5]})
        except (ValueError, IndexError):
            continue
    return rows


def summarize(n: int, rows: list[dict], wall: float) -> dict:
    by_kernel: dict[str, list[float]] = {}
    for r in rows:
        if r["speedup"] is not None:
            by_kernel.setdefault(r["kernel"], []).append(r["speedup"])
    cvs = {k: statistics.stdev(v) / statistics.fmean(v) if len(v) > 1 else 0.0 for k, v in by_kernel.items()}
    waits = [r["queue_wait_ms"] or 0.0 for r in rows] or [0.0]
    gpu = [r["gpu_wait_ms"] or 0.0 for r in rows] or [0.0]

    def median(key: str) -> float:
        return statistics.median([r.get(key) or 0.0 for r in rows] or [0.0])

    return {"clients": n, "wall_s": round(wall, 2), "evaluations": len(rows),
            "outcomes": {o: sum(r["outcome"] == o for r in rows) for o in {r["outcome"] for r in rows}},
            "speedup_cv": {k: round(v, 4) for k, v in cvs.items()},
            "evaluations_per_kernel": {k: len(v) for k, v in by_kernel.items()},
            "median_speedup": {k: round(statistics.median(v), 4) for k, v in by_kernel.items()},
            "queue_wait_ms": {"median": statistics.median(waits), "max": max(waits)},
            "gpu_wait_ms": {"median": statistics.median(gpu), "max": max(gpu)},
            "timing_stage_ms_median": median("timing_ms"), "after_timing_check_ms_median": median("after_ms"),
            "timing_parts_ms_median": {k: median(k + "_ms") for k in ("setup", "inputs", "calls", "checks")},
            "rounds_median": median("rounds"), "gate_ms_median": median("gate_ms"),
            "not_exclusive": sum(1 for r in rows if r["not_exclusive"]),
            "gate_retakes": {"evaluations_with": sum(1 for r in rows if r.get("retakes")),
                             "total": sum(r.get("retakes") or 0.0 for r in rows)}, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--kernels", nargs="*", default=None, help="solution stems (default: every level*.py)")
    parser.add_argument("--timing-trials", type=int, default=None,
                        help="EvalConfig.timing_trials: the fewest timed rounds (default: 10 on cuda)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    names = args.kernels or sorted(p.stem for p in SOL.glob("level*.py"))
    os.environ.setdefault("KERNEL_GYM_JUDGE_DIR", tempfile.mkdtemp(prefix="bench_judges_"))
    config = {} if args.timing_trials is None else {"timing_trials": args.timing_trials, "timing_max_trials": 300}
    results = []
    signal.signal(signal.SIGTERM, stopped)  # `timeout`: keep what was measured, stop the judge
    try:
        for n in args.clients:  # written after each N: a run cut short keeps what it measured
            results.append(run_clients(n, names, args.repeats, args.device, config))
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / "clients.json").write_text(json.dumps(results, indent=1))
            report([results[-1]])
            if results[-1]["interrupted"]:
                break
    finally:
        from kernel_gym.judge.client import stop_judge

        for path in Path(os.environ["KERNEL_GYM_JUDGE_DIR"]).glob("*.sock"):
            print(f"stopping the judge at {path.name}: {stop_judge(path)}", flush=True)  # and its runners' GPU memory
    report(results)


def stopped(*_: object) -> None:
    """The first SIGTERM ends the run; later ones are ignored (`timeout` signals its child and then its whole process
    group, so this process gets two, and a second exit while the first is handled would lose the report)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(124)


def report(results: list[dict]) -> None:
    for r in results:
        for row in r["rows"]:
            if row["outcome"] != "correct":
                print(f"{r['clients']} client(s), {row['kernel']}: {row['outcome']}: {row.get('message', '')}")
    print("\n### One judge, many clients\n")
    print("| clients | evaluations | wall s | worst speedup CV | median speedup CV | queue wait median / max ms "
          "| GPU wait median / max ms | timing stage median ms | not exclusive |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        cvs = list(r["speedup_cv"].values()) or [0.0]
        print(f"| {r['clients']} | {r['evaluations']} | {r['wall_s']} | {100 * max(cvs):.2f} % | "
              f"{100 * statistics.median(cvs):.2f} % | {r['queue_wait_ms']['median']:.0f} / {r['queue_wait_ms']['max']:.0f} "
              f"| {r['gpu_wait_ms']['median']:.0f} / {r['gpu_wait_ms']['max']:.0f} | {r['timing_stage_ms_median']:.0f} "
              f"| {r['not_exclusive']} |")
    for r in results:
        print(f"\n{r['clients']} client(s): median rounds {r['rounds_median']}, gate {r['gate_ms_median']:.2f} ms, "
              f"after-timing check {r['after_timing_check_ms_median']:.0f} ms (inside the timing stage), "
              f"gate retakes {r.get('gate_retakes')}; the timing stage's parts (median ms, host time): "
              f"{r.get('timing_parts_ms_median')}")
    for r in results:
        if r.get("gpu"):
            print(f"\n{r['clients']} client(s), the GPU over the run: {r['gpu']}")
        for row in strays(r):
            print(f"  stray: {row['kernel']} speedup {row['speedup']:.4f} (median {r['median_speedup'][row['kernel']]}) "
                  f"runtime {row.get('runtime_ms')} ms baseline {row.get('baseline_ms')} ms rounds {row['rounds']} "
                  f"cv {row['cv']:.4f} sm {row.get('sm_mhz')} mem {row.get('mem_mhz')} throttle {row.get('throttle')}")
    for r in results:
        print(f"\nper-kernel speedup CV, {r['clients']} client(s):",
              ", ".join(f"{k} {100 * v:.2f} %" for k, v in sorted(r["speedup_cv"].items())))


def strays(result: dict, off: float = 0.03) -> list[dict]:
    """Evaluations whose speedup is more than `off` from their kernel's median."""
    med = result["median_speedup"]
    return [row for row in result["rows"] if row.get("speedup") and row["kernel"] in med
            and abs(row["speedup"] / med[row["kernel"]] - 1) > off]


if __name__ == "__main__":
    main()
