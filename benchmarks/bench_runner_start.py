"""How long a runner takes to be ready, started as a fresh interpreter or forked from the fork server
(judge/spawner.py), on the device the runners use; and one genuine evaluation with each, as a check that a forked
runner judges the same.

    python benchmarks/bench_runner_start.py --device cuda --n 5 --out DIR

"Ready" is what a job waits for when its slot's runner was replaced (after a crash, a hack or a timeout): the
interpreter or the fork, the runner's imports and, on cuda, its CUDA context and interprocess events. On cuda the
fork server itself never touches CUDA (a forked child could not use it); each forked runner makes its own context.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def ready_seconds(device: str, n: int) -> list[float]:
    from kernel_gym.judge.runners import RunnerProcess

    RunnerProcess(device).stop()  # the first start of a mode (the fork server's own start) is not counted
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        runner = RunnerProcess(device)
        runner.wait_ready()
        times.append(time.monotonic() - t0)
        runner.stop()
    return times


def one_evaluation(device: str) -> dict:
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.judge.pool import WorkerPool
    from kernel_gym.tasks import load_task

    pool = WorkerPool(device)
    try:
        code = (ROOT / "tests" / "solutions" / "level1_relu.py").read_text()
        result = pool.evaluate(job_for(load_task("level1/relu"), code, backend="triton",
                                       config=EvalConfig(device=device)))
        return {"outcome": result.outcome.value, "speedup": result.speedup}
    finally:
        pool.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--n", type=int, default=5)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    rows = {}
    for mode, flag in (("fresh", "0"), ("forked", "1")):
        os.environ["KERNEL_GYM_FORKSERVER"] = flag
        times = ready_seconds(args.device, args.n)
        rows[mode] = {"ready_s": [round(t, 3) for t in times], "median_s": round(statistics.median(times), 3),
                      "evaluation": one_evaluation(args.device)}
        print(mode, json.dumps(rows[mode]), flush=True)
    print(f"\n### Runner start-up on {args.device} ({args.n} starts each)\n")
    print("| start | ready median s | min / max s | a genuine level1/relu evaluation |\n|---|---|---|---|")
    for mode, r in rows.items():
        ev = r["evaluation"]
        print(f"| {mode} | {r['median_s']} | {min(r['ready_s'])} / {max(r['ready_s'])} | {ev['outcome']}, "
              f"speedup {ev['speedup']} |")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"runner_start_{args.device}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
