"""backend="cute_dsl" and "tilelang" on the CPU backend (kernel_gym.backends): gym.make refuses them in one line; a
response of theirs that backend="auto" finds on a cpu env gets its static verdict, then `unsupported`; every place
that takes a backend name takes theirs."""

from __future__ import annotations

import pathlib

import gymnasium as gym
import pytest

import kernel_gym  # noqa: F401
from kernel_gym.backends import CHOICES, GPU_ONLY, NAMES, cpu_refusal
from kernel_gym.config import BACKENDS, make_config
from kernel_gym.errors import BackendUnavailableError, ConfigError
from kernel_gym.eval.evaluator import evaluate_job
from kernel_gym.eval.job import EvalConfig, EvalJob
from kernel_gym.eval.result import Outcome

TESTS = pathlib.Path(__file__).resolve().parent
SOLUTIONS = {"cute_dsl": TESTS / "cute_dsl" / "solutions" / "level1_relu.py",
             "tilelang": TESTS / "tilelang" / "solutions" / "level1_relu.py"}


class NeverCalled:
    """An evaluator that must not be reached (nothing of a GPU-only backend runs on cpu)."""

    device = "cpu"

    def evaluate(self, job):
        raise AssertionError("a GPU-only backend's job reached the evaluator on cpu")

    def close(self):
        pass


@pytest.mark.parametrize("backend", sorted(GPU_ONLY))
def test_gym_make_on_cpu_refuses_in_one_line(backend):
    with pytest.raises(BackendUnavailableError) as refused:
        gym.make("KernelRefine-v0", task="level1/relu", backend=backend, device="cpu")
    text = str(refused.value)
    assert "\n" not in text and f"backend={backend!r} needs an NVIDIA GPU" in text and "device='cuda'" in text
    assert isinstance(refused.value, ConfigError)  # (a usage error: `kernel-gym eval` exits 2 on it)


def test_every_place_that_takes_a_backend_takes_both():
    assert set(GPU_ONLY) <= set(NAMES) and CHOICES == ("auto", *NAMES) and BACKENDS == CHOICES
    for backend in GPU_ONLY:
        assert make_config(backend=backend, device="cuda").backend == backend  # (validated without a GPU)
    with pytest.raises(ConfigError):
        make_config(backend="cute")


@pytest.mark.parametrize("backend", sorted(GPU_ONLY))
def test_auto_on_cpu_gives_the_static_verdict_then_unsupported(backend):
    code = SOLUTIONS[backend].read_text()
    job = EvalJob(task_id="level1/relu", code=code, config=EvalConfig(device="cpu", checks="strict"))
    assert job.backend == backend  # detected from the code
    result = evaluate_job(job, NeverCalled())
    assert result.outcome is Outcome.UNSUPPORTED and result.backend == backend
    assert result.message.startswith("the static checks passed, but ") and cpu_refusal(backend) in result.message
    hack = code.replace("return kernel(flat).view_as(x)", "return torch.relu(x)") if backend == "tilelang" else \
        code.replace("return out.view_as(x)", "return torch.relu(x)")
    rejected = evaluate_job(EvalJob(task_id="level1/relu", code=hack, config=EvalConfig(device="cpu")), NeverCalled())
    assert rejected.outcome is Outcome.REJECTED and "library_op" in rejected.hacks  # the rules still speak on cpu


def test_an_auto_env_on_cpu_steps_to_unsupported():
    env = gym.make("KernelRefine-v0", task="level1/relu", device="cpu", max_turns=1, evaluator=NeverCalled())
    try:
        env.reset(seed=0)
        info = env.step("CuTe DSL.\n```python\n" + SOLUTIONS["cute_dsl"].read_text() + "```\n")[4]
    finally:
        env.close()
    assert info["backend"] == "cute_dsl" and info["error"] == "unsupported" and not info["correct"]
    assert "needs an NVIDIA GPU" in info["feedback"]


def test_the_runners_keep_the_dsl_caches_in_the_jobs_folder(tmp_path):
    from kernel_gym.harness.integrity import JOB_IMPORTED_DSLS
    from kernel_gym.sandbox.limits import job_environment

    env = job_environment(tmp_path)
    for var in ("CUTE_DSL_CACHE_DIR", "CUTE_DSL_DUMP_DIR", "TILELANG_CACHE_DIR", "TVM_FFI_CACHE_DIR"):
        assert pathlib.Path(env[var]).parent == tmp_path, var
    assert {"cutlass", "tilelang"} <= set(JOB_IMPORTED_DSLS)  # a runner that imported one is not reused
