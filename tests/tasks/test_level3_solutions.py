"""The level-3 solutions (tests/solutions/level3_*.py) at sizes their tasks' CPU and alt sizes do not reach.

Every solution is judged at its task's own sizes by tests/anti_hacking/test_genuine.py (strict, through the env).
Some code paths only run at other shapes: several tiles of a reduction to merge, key blocks a sliding window skips
or that lie wholly outside some rows' windows, an expert queue longer than one block of the prefix count and most
assignments past capacity. Here the judge (the real pipeline, static rules aside) runs them there, and each must be
correct within the error budget against the float64 oracle.
"""

from __future__ import annotations

import pathlib

import pytest

from kernel_gym.eval.job import EvalConfig, EvalJob
from kernel_gym.tasks import load_task

SOLUTIONS = pathlib.Path(__file__).resolve().parents[1] / "solutions"

# task -> (sizes, what they reach that the task's cpu/alt sizes do not)
EXTRA_SIZES = {
    "level3/sliding_window_attention": (
        {"batch_size": 1, "seq_len": 100, "d_model": 64, "n_heads": 4, "n_kv_heads": 2, "window": 5},
        "skipped key blocks; rows whose first visited block is wholly outside their window"),
    "level3/clip_contrastive_loss": (
        {"batch_size": 100, "image_dim": 24, "text_dim": 20, "embed_dim": 16},
        "2 x 2 similarity tiles, partial at the edges: row and column partials merged"),
    "level3/moe_topk_experts": (
        {"num_tokens": 530, "d_model": 32, "expert_dim": 40, "n_experts": 5, "capacity_factor": 0.5},
        "1060 assignments (two blocks of the queue's prefix count), half of them past capacity"),
    "level3/mamba_selective_scan": (
        {"batch_size": 1, "seq_len": 40, "d_model": 24, "d_inner": 80, "d_state": 5, "dt_rank": 3},
        "several channel blocks of the scan, the last partial; d_state not a power of two"),
    "level3/convnext_block": (
        {"batch_size": 1, "channels": 40, "height": 13, "width": 11},
        "several pixel blocks of the convolution + norm kernel, padded channels"),
}


@pytest.fixture(scope="module")
def pool():
    from kernel_gym.judge.local import LocalEvaluator

    ev = LocalEvaluator("cpu", workers=1)
    ev.start()
    ev.pool.warm_up()
    yield ev.pool
    ev.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("task_id", sorted(EXTRA_SIZES))
def test_solution_is_correct_at_sizes_beyond_the_tasks_own(pool, task_id):
    sizes, reaches = EXTRA_SIZES[task_id]
    task = load_task(task_id)
    code = (SOLUTIONS / f"{task_id.replace('/', '_')}.py").read_text()
    job = EvalJob(task_id=task.id, task_source=task.source, code=code, backend="triton", sizes=sizes,
                  dtype=task.dtype, allow_precision=task.allow_precision,
                  config=EvalConfig(device="cpu", checks="strict", compile_timeout_s=120, run_timeout_s=120,
                                    correctness_trials=1, timing_trials=1, warmup=1, check_alt_shape=False))
    result = pool.evaluate(job)
    where = f"{task_id} at {sizes} ({reaches}): {result.outcome} {result.hacks} {result.message[:600]}"
    assert result.correct and not result.hacks, where
    c = result.correctness
    assert c["rule"] == "oracle" and c["candidate_error"] <= c["limit"], where
