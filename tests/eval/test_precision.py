"""precision="fp32"|"fp16"|"bf16" (KernelBench's option): the task's floating inputs and both models' parameters are
cast to it in the judge and the runners; the job's dtype, tolerances, the error budget and the prompt follow."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import kernel_gym  # noqa: F401
from kernel_gym.errors import ConfigError
from kernel_gym.eval.job import EvalConfig, EvalJob, job_for
from kernel_gym.eval.result import Outcome
from kernel_gym.tasks import load_task
from kernel_gym.tasks.precision import at_precision, dtype_of, supported

# A ReLU whose forward refuses inputs or parameters that are not fp16: it is correct only if both were cast.
FP16_ONLY = '''
import torch, triton, triton.language as tl

@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)

class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.probe = torch.nn.Parameter(torch.zeros(1))

    def forward(self, x):
        if x.dtype != torch.float16 or self.probe.dtype != torch.float16:
            raise TypeError(f"got inputs {x.dtype}, parameters {self.probe.dtype}")
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
'''


def test_a_task_at_a_precision():
    task = load_task("level1/relu")
    half = at_precision(task, "bf16")
    assert (half.dtype, half.metadata["native_dtype"], half.metadata["precision"]) == ("bfloat16", "float32", "bf16")
    assert at_precision(task, None) is task and at_precision(task, "fp32") is task
    assert dtype_of("fp16") == "float16" and supported(task) == ("fp32", "fp16", "bf16")
    with pytest.raises(ConfigError, match="unknown precision"):
        dtype_of("fp8")
    c_task = load_task("c2cuda/saxpy")
    assert supported(c_task) == ("fp32",)  # a C function's pointer types are fixed
    with pytest.raises(ConfigError, match="does not run at bf16"):
        at_precision(c_task, "bf16")


def test_the_job_follows_the_precision_and_drops_the_tasks_own_tolerance():
    task = load_task("level1/relu")
    task = type(task)(**{**task.__dict__, "metadata": {**task.metadata, "atol": 1e-5, "rtol": 1e-5}})
    native = job_for(task, "", backend="triton", config=EvalConfig(device="cpu"))
    half = job_for(task, "", backend="triton", config=EvalConfig(device="cpu", precision="fp16"))
    assert (native.dtype, native.tolerance) == ("float32", (1e-5, 1e-5))
    assert (half.dtype, half.tolerance) == ("float16", None)  # (the per-dtype default, 1e-2, applies)
    bare = EvalJob(task_id="level1/relu", code="", config=EvalConfig(device="cpu", precision="bf16"))
    assert bare.dtype == "bfloat16"


@pytest.mark.timeout(300)
def test_inputs_and_both_models_are_cast_in_the_judge_and_runners(solution):
    from kernel_gym.judge.pool import WorkerPool

    task = load_task("level1/relu")
    pool = WorkerPool("cpu", size=1)
    try:
        at = {p: pool.evaluate(job_for(task, FP16_ONLY, backend="triton", config=EvalConfig(device="cpu", precision=p)))
              for p in ("fp16", None)}
        genuine = pool.evaluate(job_for(load_task("level2/gemm_relu"), solution("level2/gemm_relu"),
                                        backend="triton", config=EvalConfig(device="cpu", precision="fp16")))
    finally:
        pool.close()
    assert at["fp16"].outcome is Outcome.CORRECT, at["fp16"].message
    assert at[None].outcome is not Outcome.CORRECT and "got inputs torch.float32" in at[None].message
    assert genuine.outcome is Outcome.CORRECT, genuine.message  # an nn.Linear's weights cast on both sides
    assert genuine.correctness["rule"] == "oracle" and genuine.correctness["floor"] == 4e-3  # fp16's budget


def test_make_says_the_precision_in_the_prompt_and_warns_of_bf16_on_cpu():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gym.make("KernelRefine-v0", task="level1/matmul", device="cpu", precision="bf16")
    try:
        assert any("bf16 arithmetic under Triton's CPU interpreter" in str(w.message) for w in caught)
        obs, _ = env.reset(seed=0)
        assert "Precision bf16" in obs and "torch.bfloat16" in obs
    finally:
        env.close()
    with pytest.raises(ConfigError, match="unknown precision"):
        gym.make("KernelRefine-v0", task="level1/relu", device="cpu", precision="half")


def test_bf16_on_cpu_is_a_blind_spot_of_the_interpreter():
    """Measured: Triton's CPU interpreter computes bf16 arithmetic on the raw uint16 bits; the step says so."""
    from kernel_gym.device import blind_spots

    assert any("bfloat16" in s for s in blind_spots("cpu", "bfloat16"))
    assert not any("bfloat16" in s for s in blind_spots("cpu", "float16"))
    assert not any("bfloat16" in s for s in blind_spots("cuda", "bfloat16"))
