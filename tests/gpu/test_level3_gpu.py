"""The level-3 solutions (tests/solutions/level3_*.py) on a GPU at their tasks' full sizes and native bf16, under
`strict` (issue #40: at least 10 genuine solutions judged correct on a GPU, so the suite is known solvable).

All of them go to the machine's judge at once (kernel_gym.evaluate_many: the static rules, then the judge, which
compiles them side by side and times one at a time); each one's verdict is printed (`-s` shows them). On the CPU
they are judged at the tasks' CPU sizes by tests/anti_hacking/test_genuine.py and at further sizes by
tests/tasks/test_level3_solutions.py."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
SOLUTIONS = sorted((Path(__file__).resolve().parents[1] / "solutions").glob("level3_*.py"))


def task_of(path: Path) -> str:
    return path.stem.replace("_", "/", 1)  # level3_kv_cache_decode -> level3/kv_cache_decode


@pytest.mark.timeout(900)
def test_every_level3_solution_is_correct_and_timed_at_full_size():
    """One test for all (each xdist worker would otherwise judge them all again for its share of the tests)."""
    from kernel_gym import evaluate_many
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    assert len(SOLUTIONS) >= 10
    config = EvalConfig(device="cuda", checks="strict", compile_timeout_s=600)
    jobs = [job_for(load_task(task_of(p)), p.read_text(), backend="triton", config=config) for p in SOLUTIONS]
    failed = []
    for path, result in zip(SOLUTIONS, evaluate_many(jobs, workers=len(jobs))):
        ok = (result.correct and not result.hacks and result.timing is not None
              and result.timing.method.startswith("judge_cuda_events") and (result.speedup or 0) > 0)
        print(f"{task_of(path)}: {result.outcome.value}, speedup {result.speedup}, "
              f"baseline {result.timing.baseline_ms if result.timing else None} ms")
        if not ok:
            failed.append(f"{task_of(path)}: {result.outcome.value} {result.hacks} {result.message[:600]}")
    assert not failed, "\n".join(failed)
