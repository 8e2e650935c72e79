"""Genuine kernels, `SLOTS` (8) at once on one judge pool: their verdicts by configuration (a diagnostic: a genuine
kernel must be `correct` whatever else runs beside it).

    python benchmarks/probe_concurrent_genuine.py '{"oracle": false}'     # EvalConfig fields as JSON
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel_gym.eval.job import EvalConfig, job_for  # noqa: E402
from kernel_gym.judge.pool import WorkerPool  # noqa: E402
from kernel_gym.tasks import load_task  # noqa: E402

SOL = Path(__file__).resolve().parents[1] / "tests" / "solutions"
NAMES = ["level1_relu", "level1_sum_reduce", "level1_matmul", "level2_rowscale_softmax_residual"]


def main() -> None:
    extra = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    slots = int(os.environ.get("SLOTS", "8"))
    pool = WorkerPool("cuda", slots, gpus=[0] * slots)
    pool.warm_up()
    jobs = [job_for(load_task(n.replace("_", "/", 1)), (SOL / f"{n}.py").read_text(), backend="triton",
                    config=EvalConfig(device="cuda", seed=i, **extra)) for i in range(4) for n in NAMES]
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(slots) as ex:
        results = list(ex.map(pool.evaluate, jobs))
    counts = collections.Counter((j.task_id, r.outcome.value, r.hacks) for j, r in zip(jobs, results))
    print(json.dumps(extra), "stop_others", os.environ.get("KERNEL_GYM_STOP_OTHERS", "1"), f"{time.time() - t0:.1f}s")
    for key, n in sorted(counts.items()):
        print("  ", n, key)
    for r in [r for r in results if r.hacks][:2]:
        print("  e.g.", r.message[:300], json.dumps(r.correctness)[:800], json.dumps(r.stage_ms)[:600])
    pool.close()


if __name__ == "__main__":
    main()
