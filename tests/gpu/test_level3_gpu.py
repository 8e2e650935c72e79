"""The level-3 solutions (tests/solutions/level3_*.py) on a GPU at their tasks' full sizes and native bf16, under
`strict` (issue #40: at least 10 genuine solutions judged correct on a GPU, so the suite is known solvable).

All of them go to the machine's judge at once (kernel_gym.evaluate_many: the static rules, then the judge, which
compiles them side by side and times one at a time); each test reads its solution's verdict. On the CPU they are
judged at the tasks' CPU sizes by tests/anti_hacking/test_genuine.py and at further sizes by
tests/tasks/test_level3_solutions.py."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
SOLUTIONS = sorted((Path(__file__).resolve().parents[1] / "solutions").glob("level3_*.py"))


def task_of(path: Path) -> str:
    return path.stem.replace("_", "/", 1)  # level3_kv_cache_decode -> level3/kv_cache_decode


@pytest.fixture(scope="module")
def verdicts() -> dict:
    from kernel_gym import evaluate_many
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    config = EvalConfig(device="cuda", checks="strict", compile_timeout_s=600)
    jobs = [job_for(load_task(task_of(p)), p.read_text(), backend="triton", config=config) for p in SOLUTIONS]
    return dict(zip([p.stem for p in SOLUTIONS], evaluate_many(jobs, workers=len(jobs))))


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_level3_solution_is_correct_and_timed_at_full_size(verdicts, path):
    result = verdicts[path.stem]
    where = f"{task_of(path)}: {result.outcome.value} {result.hacks} {result.message[:800]}"
    assert result.correct and not result.hacks, where
    assert result.timing.method.startswith("judge_cuda_events"), where
    assert result.speedup and result.speedup > 0 and result.timing.baseline_ms > 0, where
