"""LocalEvaluator's answer when its judge fails: once more on fresh runners, then an infrastructure crash."""

from __future__ import annotations

import pytest

from kernel_gym.errors import SandboxError
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.judge.local import LocalEvaluator


class FailingPool:
    """A pool whose judge fails on the first `failures` jobs (a runner that cannot start)."""

    def __init__(self, failures: int):
        self.failures, self.calls = failures, 0

    def evaluate(self, job: EvalJob) -> EvalResult:
        self.calls += 1
        if self.calls <= self.failures:
            raise SandboxError("runner failed to start (ChannelTimeout): ")
        return EvalResult(outcome=Outcome.CORRECT, backend=job.backend)

    def close(self) -> None:
        pass


def _evaluator(pool: FailingPool) -> LocalEvaluator:
    evaluator = LocalEvaluator("cpu", shared=False)
    evaluator._pool = pool  # noqa: SLF001 - the pool the evaluator would have started
    return evaluator


def test_a_judge_failure_is_tried_once_more():
    pool = FailingPool(failures=1)
    result = _evaluator(pool).evaluate(EvalJob(task_id="level1/relu", code=""))
    assert result.outcome is Outcome.CORRECT and not result.infra_failure and pool.calls == 2


def test_a_judge_that_fails_twice_gives_an_infrastructure_crash():
    pool = FailingPool(failures=2)
    result = _evaluator(pool).evaluate(EvalJob(task_id="level1/relu", code=""))
    assert result.outcome is Outcome.CRASH and result.infra_failure and pool.calls == 2
    assert "infrastructure failed" in result.message and "runner failed to start" in result.message


def test_one_failing_job_does_not_fail_a_batch(solution):
    """`evaluate_many` with an evaluator of one's own (no evaluate_many of its own) that fails on one job: that job is
    an infrastructure crash, the others keep their results."""
    from kernel_gym.judge.local import evaluate_many

    class FailsOnSecond:
        calls = 0

        def evaluate(self, job):
            FailsOnSecond.calls += 1
            if FailsOnSecond.calls == 2:
                raise SandboxError("the task's reference failed (oom): ")
            return EvalResult(outcome=Outcome.MISMATCH, backend=job.backend)

        def close(self):
            pass

    jobs = [EvalJob(task_id="level1/relu", code=solution("level1/relu")) for _ in range(3)]  # past the static rules
    results = evaluate_many(jobs, evaluator=FailsOnSecond())
    assert [r.outcome for r in results] == [Outcome.MISMATCH, Outcome.CRASH, Outcome.MISMATCH]
    assert [r.infra_failure for r in results] == [False, True, False]


def test_local_evaluator_lives_with_the_judge_and_its_old_path_warns():
    """LocalEvaluator and evaluate_many are the judge's (kernel_gym.judge.local); kernel_gym.eval.evaluator, their
    home before, still gives them, with a DeprecationWarning."""
    import kernel_gym
    from kernel_gym.eval import evaluator as old
    from kernel_gym.judge import local

    with pytest.warns(DeprecationWarning, match="kernel_gym.judge.local"):
        assert old.LocalEvaluator is local.LocalEvaluator
    with pytest.warns(DeprecationWarning):
        assert old.evaluate_many is local.evaluate_many
    assert kernel_gym.LocalEvaluator is local.LocalEvaluator and kernel_gym.evaluate_many is local.evaluate_many


@pytest.mark.timeout(300)
def test_no_traceback_at_exit_without_close(tmp_path):
    """A script that leaves its evaluator open (no close()) exits without a traceback: the pool is closed while
    the interpreter is whole (before: ImportError 'sys.meta_path is None' from the pool's __del__ at shutdown)."""
    import subprocess
    import sys

    script = tmp_path / "leave_open.py"
    script.write_text(
        "from kernel_gym.eval.job import EvalConfig, EvalJob\n"
        "from kernel_gym.judge.local import LocalEvaluator\n"
        "ev = LocalEvaluator('cpu', shared=False)\n"
        "r = ev.evaluate(EvalJob(task_id='level1/relu', code='x = 1', config=EvalConfig(device='cpu')))\n"
        "print(r.outcome.value)\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240)
    assert run.returncode == 0 and run.stdout.strip(), run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr, run.stderr[-2000:]
