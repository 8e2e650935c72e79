"""A judged job leaves nothing of its own alive in the judge: its inputs and outputs go with its verdict by reference
counting alone. An idle judge allocates too little to run Python's cycle collector, so a cycle through a job's
tensors held them until the judge's next busy spell (on an H100 a full-size relu job left 9.4 GiB held after the
idle release; RESULTS.md, third GPU session)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import torch

from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.eval.result import Outcome
from kernel_gym.tasks import load_task

SOL = Path(__file__).resolve().parents[1] / "solutions"


@pytest.fixture(scope="module")
def pool():
    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cpu")
    pool.warm_up()
    yield pool
    pool.close()


def _job_tensors() -> list[torch.Tensor]:
    return [o for o in gc.get_objects() if isinstance(o, torch.Tensor) and o.numel() >= 16 * 256]


@pytest.mark.parametrize("wrong", [False, True], ids=["correct", "mismatch"])
def test_a_jobs_tensors_go_with_its_verdict(pool, wrong):
    code = (SOL / "level1_relu.py").read_text()
    if wrong:
        code = code.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.5)")
    job = job_for(load_task("level1/relu"), code, backend="triton", config=EvalConfig(device="cpu"))
    pool.evaluate(job)  # (warm: imports and first-job caches)
    gc.collect()
    before = len(_job_tensors())
    gc.disable()
    try:
        result = pool.evaluate(job)
        left = _job_tensors()
    finally:
        gc.enable()
    assert result.outcome is (Outcome.MISMATCH if wrong else Outcome.CORRECT), result.message
    assert len(left) <= before, [tuple(t.shape) for t in left]
