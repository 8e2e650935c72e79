"""EvalJob: the obvious construction (a task id and the code) follows the task and the device, as the env does."""

import re

import pytest

from kernel_gym.eval.job import EvalConfig, EvalJob, job_for
from kernel_gym.tasks import load_task


def test_sizes_follow_the_device(solution):
    code, task = solution("level1/relu"), load_task("level1/relu")
    cpu = EvalJob(task_id="level1/relu", code=code)
    assert cpu.sizes == task.sizes_for("cpu") != {} and cpu.alt_sizes == task.alt_sizes_for("cpu")
    assert (cpu.backend, cpu.dtype, cpu.task_source) == ("triton", task.dtype, task.source)
    assert cpu == job_for(task, code, backend="triton", config=EvalConfig())  # what the env sends
    cuda = EvalJob(task_id="level1/relu", code=code, config=EvalConfig(device="cuda"))
    assert cuda.sizes == {} and cuda == job_for(task, code, backend="triton", config=EvalConfig(device="cuda"))


def test_what_is_given_is_kept(solution):
    job = EvalJob(task_id="level1/relu", code=solution("level1/relu"), sizes={"batch_size": 2}, backend="cuda")
    assert job.sizes == {"batch_size": 2} and job.alt_sizes is None and job.backend == "cuda"
    assert EvalJob.from_dict(job.to_dict()) == job


def test_unknown_task_fails_at_construction():
    from kernel_gym.errors import UnknownTaskError

    with pytest.raises(UnknownTaskError, match="Did you mean 'level1/relu'"):
        EvalJob(task_id="level1/rleu", code="")


@pytest.mark.timeout(300)
def test_readme_batch_example_runs(repo_root, monkeypatch, capsys):
    text = (repo_root / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "evaluate_many" in b)
    monkeypatch.chdir(repo_root)
    exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out.count("'correct'") == 2
