"""Build CUDA (load_inline) solutions into the shared extension cache, several at once.

    python scripts/warm_cuda_cache.py tests/solutions/cuda/*.py [--task level1/relu] [--workers 4]

Each file is evaluated as one job by its own sandbox worker, concurrently; the content-hashed build cache
($KERNEL_GYM_CACHE/extensions) then serves every later evaluation of the same source in milliseconds. Prints each
job's outcome and compile time, and the wall time of the whole batch.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.judge.local import LocalEvaluator
from kernel_gym.tasks import load_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--task", default="level1/relu")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    task = load_task(args.task)
    config = EvalConfig(device=args.device, correctness_trials=1, timing_trials=1, warmup=0, compile_timeout_s=900,
                        checks="permissive")
    jobs = [job_for(task, Path(f).read_text(), backend="cuda", config=config) for f in args.files]
    evaluator = LocalEvaluator(args.device, workers=min(args.workers, len(jobs)))
    t0 = time.perf_counter()
    try:
        results = evaluator.evaluate_many(jobs)
    finally:
        evaluator.close()
    for f, r in zip(args.files, results):
        print(f"{f}: {r.outcome.value}, compile {r.stage_ms.get('compile', float('nan')) / 1e3:.1f} s")
    print(f"{len(jobs)} jobs, {evaluator.workers} workers: {time.perf_counter() - t0:.1f} s wall")


if __name__ == "__main__":
    main()
