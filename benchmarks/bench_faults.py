"""Fault injection: N clients share the machine's judge, each a stream of genuine kernels with faulty jobs mixed in
(tests/solutions/faults: a spin in the first call, a spin in a later call, an illegal access, `__trap()`,
out-of-memory, `abort()`, a forward that closes its channel), at several fault rates, in one run.

    python benchmarks/bench_faults.py --clients 8 --jobs 10 --rates 0 0.05 0.2 --device cuda --out DIR

Every rate evaluates the same genuine stream (each client: `jobs` evaluations of the genuine Triton solutions of
tests/solutions, one at a time, as an env steps); faults are added on top so that they are `rate` of all jobs.
Reported per rate: each fault's time to verdict and verdict; the genuine jobs' latency p50/p99 and throughput
against the 0 % run; the speedup CV of each genuine kernel; timings that ran without exclusivity (must be 0); and,
after the run, the judge's status (running jobs, jobs the watchdog ended, a GPU the probe found unusable), the
runner processes alive, and the GPU's memory in use.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOL = ROOT / "tests" / "solutions"
FAULTS = SOL / "faults"

CLIENT = r"""
import json, sys, time
sys.path.insert(0, {root!r})
from kernel_gym.judge.local import LocalEvaluator
from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.tasks import load_task
plan, device = json.loads(sys.argv[1]), sys.argv[2]
ev = LocalEvaluator(device, workers=1, shared=True)
STAGES = ("compile", "compile_segments", "correctness", "oracle", "timing", "gpu_lock_wait", "gpu_shared_wait", "step")
for kind, task_id, path, seed in plan:  # one at a time per client, as an env steps
    checks = "standard" if kind == "genuine" else "none"  # faults reach the judge (no static rule stops them)
    job = job_for(load_task(task_id), open(path).read(), backend="cuda_raw" if "cuda_raw" in open(path).read() else "triton",
                  config=EvalConfig(device=device, seed=seed, checks=checks))
    t0 = time.time()
    r = ev.evaluate(job)
    print(json.dumps({{"kind": kind, "kernel": path.rsplit("/", 1)[-1][:-3],
                      "outcome": r.outcome.value, "hacks": list(r.hacks), "infra": r.infra_failure,
                      "speedup": r.speedup, "latency_s": round(time.time() - t0, 3), "t0": t0, "t1": time.time(),
                      "message": r.message[:300] if r.outcome.value != "correct" else "",
                      "queue_wait_ms": r.stage_ms.get("judge_queue_wait"), "gpu_wait_ms": r.stage_ms.get("gpu_lock_wait"),
                      "alone_wait_ms": r.stage_ms.get("alone_wait"), "timeout_reruns": r.stage_ms.get("timeout_reruns"),
                      "stage_ms": r.stage_ms if r.outcome.value != "correct" else {{k: r.stage_ms.get(k) for k in STAGES}},
                      "not_exclusive": r.signals.get("timing_not_exclusive", 0.0)}}), flush=True)
ev.close()
"""


def genuine_plan(jobs: int, client: int) -> list[tuple[str, str, str, int]]:
    names = sorted(p.stem for p in SOL.glob("level*.py"))
    out = []
    for j in range(jobs):
        name = names[(client + j) % len(names)]
        out.append(("genuine", name.replace("_", "/", 1), str(SOL / f"{name}.py"), j))
    return out


def fault_plan(rate: float, clients: int, jobs: int, seed: int = 0) -> dict[int, list[tuple[int, str]]]:
    """Where the faults go: (client -> [(position, fault file)]), so that faults are `rate` of all jobs and of every
    client's stream alike (client i gets the i-th, (i + clients)-th, ... fault: counts differ by one at most), each at
    a random position in its stream. (Drawing the client at random too gave one client of eight 2-3 faults at 20 %
    and four jobs a client, so the wall time measured that client's own faults more than their cost to others.)"""
    total_genuine = clients * jobs
    n = round(rate * total_genuine / (1 - rate)) if rate > 0 else 0
    kinds = sorted(p.stem for p in FAULTS.glob("*.py"))
    rng = random.Random(seed)
    order = rng.sample(range(clients), clients)  # which clients get the one extra fault when n % clients != 0
    plan: dict[int, list[tuple[int, str]]] = {}
    for i in range(n):
        plan.setdefault(order[i % clients], []).append((rng.randrange(jobs + 1), kinds[i % len(kinds)]))
    return plan


def judge_client(device: str):
    """A client of the machine's judge for `device`; where none runs this starts it as the clients would
    (KERNEL_GYM_JUDGE_SLOTS, 8 by default: LocalEvaluator's). (JudgeClient.for_device's default is one slot: the
    2026-12-07f run started its judge here with one, and measured that.)"""
    from kernel_gym.judge.client import JudgeClient

    return JudgeClient.for_device(device, slots=int(os.environ.get("KERNEL_GYM_JUDGE_SLOTS", "8") or 8))


def judge_pid(device: str) -> int | None:
    """The pid of the machine's judge for `device` now (None when none answers; starts one where none runs)."""
    try:
        client = judge_client(device)
        try:
            return client.status().get("pid")
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - reported as None
        return None


def judge_starts() -> list[str]:
    """Every judge start logged so far in this run's judge folder (one line each: when, and the pid)."""
    folder = Path(os.environ["KERNEL_GYM_JUDGE_DIR"])
    return [line for log in sorted(folder.glob("*.log")) for line in log.read_text(errors="replace").splitlines()
            if " judge on " in line]


def run_rate(rate: float, clients: int, jobs: int, device: str) -> dict:
    faults = fault_plan(rate, clients, jobs)
    pid_before = judge_pid(device)  # (starts the judge if none runs: that start is no restart)
    starts_before = len(judge_starts())
    folder = Path(tempfile.mkdtemp(prefix=f"faults_{rate}_"))
    script = CLIENT.format(root=str(ROOT))
    procs = []
    t0 = time.perf_counter()
    try:
        for c in range(clients):
            plan = genuine_plan(jobs, c)
            for pos, kind in sorted(faults.get(c, []), reverse=True):
                plan.insert(pos, (kind, "level1/relu", str(FAULTS / f"{kind}.py"), 0))
            with open(folder / f"client_{c}.jsonl", "w") as out:
                procs.append(subprocess.Popen([sys.executable, "-c", script, json.dumps(plan), device], stdout=out,
                                              text=True))
        for p in procs:
            p.wait()
        interrupted = False
    except SystemExit:
        interrupted = True
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    wall = time.perf_counter() - t0
    rows = [json.loads(line) for f in sorted(folder.glob("client_*.jsonl")) for line in f.read_text().splitlines()
            if line.startswith("{")]
    after = after_run(device)
    # a judge that died mid-run (its clients start another) costs every job it was running: must be 0
    restarts = judge_starts()[starts_before:]
    return {**summarize(rate, rows, wall), "interrupted": interrupted, "after": after,
            "judge_restarts": len(restarts), "judge_pids": [pid_before, after.get("status", {}).get("pid")],
            "judge_starts": restarts}


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else 0.0


def summarize(rate: float, rows: list[dict], wall: float) -> dict:
    genuine = [r for r in rows if r["kind"] == "genuine"]
    by_kernel: dict[str, list[float]] = {}
    for r in genuine:
        if r["speedup"] is not None and r["outcome"] == "correct":
            by_kernel.setdefault(r["kernel"], []).append(r["speedup"])
    cvs = {k: statistics.stdev(v) / statistics.fmean(v) if len(v) > 1 else 0.0 for k, v in by_kernel.items()}
    faults: dict[str, list[dict]] = {}
    for r in rows:
        if r["kind"] != "genuine":
            faults.setdefault(r["kind"], []).append({k: r[k] for k in ("outcome", "latency_s", "infra", "message")})
    lat = [r["latency_s"] for r in genuine]
    return {"rate": rate, "wall_s": round(wall, 2), "jobs": len(rows), "genuine": len(genuine),
            "genuine_outcomes": {o: sum(r["outcome"] == o for r in genuine) for o in {r["outcome"] for r in genuine}},
            "genuine_per_s": round(len(genuine) / wall, 4) if wall else 0.0,
            "genuine_latency_s": {"p50": round(pct(lat, 0.5), 3), "p99": round(pct(lat, 0.99), 3),
                                  "max": round(max(lat, default=0.0), 3)},
            "speedup_cv": {k: round(v, 4) for k, v in cvs.items()},
            "worst_cv": round(max(cvs.values(), default=0.0), 4),
            "not_exclusive": sum(1 for r in rows if r["not_exclusive"]),
            "faults": faults, "rows": rows}


def after_run(device: str) -> dict:
    """The judge's status, runner processes alive, and the GPU's memory in use, once every client is done."""

    out: dict = {}
    try:
        client = judge_client(device)
        status = client.status()
        client.close()
        out["status"] = {k: status.get(k) for k in ("pid", "running", "running_jobs", "queued", "overdue", "cancelled",
                                                      "gpu_fault", "done", "ready_slots", "slots")}
        held = set(status.get("runner_pids") or [])
    except Exception as e:  # noqa: BLE001 - reported, never fatal
        out["status_error"] = str(e)
        held = set()
    time.sleep(2.0)  # (replaced runners are killed before their verdict, reaped in the background)
    ps = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout.splitlines()
    runners = {int(line.split()[0]): line.split()[1] for line in ps[1:] if "-m kernel_gym.runner --fd" in line}
    out["runner_processes"] = len(runners)
    out["runners_outside_the_pool"] = sorted(p for p, state in runners.items() if p not in held and state[0] != "Z")
    if device == "cuda":
        smi = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True).stdout.split()
        out["gpu_memory_used_mib"] = [float(x) for x in smi if x.replace(".", "").isdigit()]
    return out


def report(results: list[dict]) -> None:
    base = next((r for r in results if r["rate"] == 0), None)
    print("\n| fault rate | jobs | genuine correct | genuine/s (x 0 %) | p50 s | p99 s (x 0 %) | worst CV | unexclusive "
          "| judge restarts |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        thr = r["genuine_per_s"] / base["genuine_per_s"] if base and base["genuine_per_s"] else float("nan")
        b99 = base["genuine_latency_s"]["p99"] if base else 0.0
        p99 = r["genuine_latency_s"]["p99"] / b99 if b99 else float("nan")
        print(f"| {100 * r['rate']:.0f} % | {r['jobs']} | {r['genuine_outcomes'].get('correct', 0)}/{r['genuine']} | "
              f"{r['genuine_per_s']:.3f} ({thr:.2f}x) | {r['genuine_latency_s']['p50']:.1f} | "
              f"{r['genuine_latency_s']['p99']:.1f} ({p99:.2f}x) | {100 * r['worst_cv']:.2f} % | {r['not_exclusive']} | {r.get('judge_restarts', '?')} |")
    print("\n| fault | verdicts | time to verdict (s): each |")
    print("|---|---|---|")
    kinds: dict[str, list[dict]] = {}
    for r in results:
        for k, v in r["faults"].items():
            kinds.setdefault(k, []).extend(v)
    for k, v in sorted(kinds.items()):
        outcomes = ", ".join(sorted({x["outcome"] + (" (infra)" if x["infra"] else "") for x in v}))
        times = ", ".join(f"{x['latency_s']:.1f}" for x in v)
        print(f"| {k} | {outcomes} | {times} |")
    for r in results:
        print(f"after {100 * r['rate']:.0f} %: {json.dumps(r['after'])}")


def stopped(*_: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(124)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=10, help="genuine evaluations per client and rate")
    parser.add_argument("--rates", type=float, nargs="+", default=[0.0, 0.05, 0.2])
    parser.add_argument("--warmup", type=int, default=1, help="genuine evaluations per client before the rates")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("KERNEL_GYM_JUDGE_DIR", tempfile.mkdtemp(prefix="bench_judges_"))
    signal.signal(signal.SIGTERM, stopped)
    results: list[dict] = []
    try:
        if args.warmup:  # the runners started and Triton's caches warm, for every rate alike
            run_rate(0.0, args.clients, args.warmup, args.device)
        for rate in args.rates:
            results.append(run_rate(rate, args.clients, args.jobs, args.device))
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / "faults.json").write_text(json.dumps(results, indent=1))
            report([results[-1]])
            if results[-1]["interrupted"]:
                break
    finally:
        from kernel_gym.judge.client import stop_judge

        folder = Path(os.environ["KERNEL_GYM_JUDGE_DIR"])
        for path in folder.glob("*.sock"):
            print(f"stopping the judge at {path.name}: {stop_judge(path)}", flush=True)
        if args.out:  # the judges' own logs (starts, exits, a fatal signal's stacks: kernel_gym.judge.server)
            args.out.mkdir(parents=True, exist_ok=True)
            for log in folder.glob("*.log"):
                (args.out / log.name).write_bytes(log.read_bytes()[-4_000_000:])
    report(results)


if __name__ == "__main__":
    main()
