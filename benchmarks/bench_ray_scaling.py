"""Evaluation throughput with 1 vs N Ray actors (one GPU each on cuda): the issue's goal is >= 0.9·N.

    # on a host with N GPUs (starts a local Ray cluster; --address auto joins a running one)
    python benchmarks/bench_ray_scaling.py --device cuda --actors 1,2,4,8 --jobs 64 --out ray_scaling.json
    # the tiny CPU config that proves the script works (Triton interpreter, small sizes)
    python benchmarks/bench_ray_scaling.py --device cpu --actors 1,2 --jobs 4 --num-cpus 2

For each actor count: a fresh RayEvaluator, its actors warmed up (sandbox workers started), one untimed warm-up
job per actor (Triton JIT and first-use costs), then `evaluate_many` over the same list of genuine solutions, timed
end to end on the caller. Prints a markdown table (jobs/s, speedup over 1 actor, efficiency = speedup / N) and
checks that every configuration gives the same verdicts.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from kernel_gym.eval.job import EvalConfig, EvalJob, job_for
from kernel_gym.tasks import load_task

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TASKS = "level1/relu,level1/softmax,level1/layernorm,level1/sum_reduce"


def make_jobs(tasks: list[str], n: int, device: str) -> list[EvalJob]:
    """`n` jobs cycling over the genuine Triton solutions of `tasks` (tests/solutions/)."""
    loaded = [load_task(t) for t in tasks]
    codes = [(ROOT / "tests" / "solutions" / (t.replace("/", "_") + ".py")).read_text() for t in tasks]
    jobs = []
    for i in range(n):
        task, code = loaded[i % len(loaded)], codes[i % len(codes)]
        jobs.append(job_for(task, f"# job {i}\n{code}", backend="triton", config=EvalConfig(device=device, seed=i)))
    return jobs


def measure(n_actors: int, jobs: list[EvalJob], args: argparse.Namespace) -> dict:
    from kernel_gym.integrations.ray import RayEvaluator

    t0 = time.perf_counter()
    ev = RayEvaluator(actors=n_actors, device=args.device, num_cpus_per_actor=args.cpus_per_actor)
    try:
        where = ev.warm_up(timeout_s=900)
        ready_s = time.perf_counter() - t0
        ev.evaluate_many(jobs[:n_actors])  # one warm-up job per actor
        before = [s["done"] for s in ev.stats()]
        t1 = time.perf_counter()
        results = ev.evaluate_many(jobs)
        wall = time.perf_counter() - t1
        per_actor = [s["done"] - b for s, b in zip(ev.stats(), before)]
    finally:
        ev.close()
    return {"actors": n_actors, "jobs": len(jobs), "wall_s": round(wall, 3), "jobs_per_s": round(len(jobs) / wall, 4),
            "ready_s": round(ready_s, 2), "jobs_per_actor": per_actor, "gpus": [w.get("gpus") for w in where],
            "outcomes": [r.outcome.value for r in results]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--actors", default="1,2", help="comma-separated actor counts; the first is the base")
    parser.add_argument("--jobs", type=int, default=32)
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--address", default=None, help="Ray address (default: start a local cluster)")
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local cluster (default: all)")
    parser.add_argument("--cpus-per-actor", type=float, default=1.0)
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    args = parser.parse_args()

    import ray

    ray.init(address=args.address, num_cpus=args.num_cpus if args.address is None else None,
             include_dashboard=False, log_to_driver=False)
    jobs = make_jobs(args.tasks.split(","), args.jobs, args.device)
    rows = [measure(int(n), jobs, args) for n in args.actors.split(",")]
    ray.shutdown()

    base = rows[0]
    print(f"{args.jobs} jobs ({args.tasks}) on {args.device}, host {platform.node()}\n")
    print("| actors | wall s | jobs/s | speedup | efficiency | jobs per actor | all verdicts equal |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        speedup = r["jobs_per_s"] / base["jobs_per_s"]
        r["speedup"], r["efficiency"] = round(speedup, 3), round(speedup * base["actors"] / r["actors"], 3)
        r["same_verdicts"] = r["outcomes"] == base["outcomes"]
        print(f"| {r['actors']} | {r['wall_s']:.2f} | {r['jobs_per_s']:.3f} | {speedup:.2f} | {r['efficiency']:.2f} "
              f"| {r['jobs_per_actor']} | {r['same_verdicts']} |")
    print(f"\noutcomes: {dict((o, base['outcomes'].count(o)) for o in sorted(set(base['outcomes'])))}")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
