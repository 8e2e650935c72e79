"""Speed machinery on a GPU: concurrent jobs on one GPU take turns timing (machine-wide per-GPU lock), and a
resubmitted CUDA action hits the build cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.judge.local import LocalEvaluator
from kernel_gym.tasks import load_task

pytestmark = pytest.mark.gpu
SOL = Path(__file__).resolve().parents[1] / "solutions"


def test_concurrent_jobs_take_turns_timing_on_one_gpu():
    task = load_task("level1/softmax")
    code = (SOL / "level1_softmax.py").read_text()
    jobs = [job_for(task, f"# job {i}\n{code}", backend="triton", config=EvalConfig(device="cuda", seed=i))
            for i in range(4)]
    evaluator = LocalEvaluator("cuda", workers=4)
    try:
        evaluator.pool.warm_up()
        results = evaluator.evaluate_many(jobs)
    finally:
        evaluator.close()
    assert all(r.correct for r in results), [r.message for r in results]
    waits = [r.stage_ms["gpu_lock_wait"] for r in results]
    # four workers reach timing at about the same time; with the lock, all but the first wait for the others
    assert sum(w > 1.0 for w in waits) >= 2, waits
    speedups = [r.speedup for r in results]
    assert max(speedups) / min(speedups) < 1.15, speedups  # undisturbed measurements agree


def test_resubmitted_cuda_action_hits_the_build_cache():
    task = load_task("level1/relu")
    code = (SOL / "cuda" / "level1_relu.py").read_text()
    evaluator = LocalEvaluator("cuda", workers=1)
    try:
        first = evaluator.evaluate(job_for(task, code, backend="cuda", config=EvalConfig(device="cuda")))
        again = evaluator.evaluate(job_for(task, code, backend="cuda", config=EvalConfig(device="cuda", seed=1)))
    finally:
        evaluator.close()
    assert first.correct and again.correct, (first.message, again.message)
    assert again.stage_ms["compile"] < 3000, again.stage_ms
