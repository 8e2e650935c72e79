"""Issue 37: one policy on library work (kernel_gym.checks.library_policy), checked once, worded once.

- The regression set of honest outside-style solutions (outside/*.py: loss epilogues in wrappers, kernels kept on
  `self`, a reduction in a C++ wrapper) is accepted on cpu under `standard`; their CUDA forms on a GPU
  (test_gpu_library_policy.py).
- Every allowed and every forbidden pattern of the policy gets the same answer from the static rule (`kernel-gym
  lint`), from the dynamic op audit alone (the real CPU pipeline, static rules bypassed) and from `eval` (the env:
  both); a rejection quotes the same sentence of the policy whichever check fired. (The third check, the profiler
  share, runs on cuda only: test_gpu_library_policy.py.)
"""

from __future__ import annotations

import pathlib

import pytest
from ah_helpers import ATTACKS, GENUINE

from kernel_gym.checks import library_policy

OUTSIDE = pathlib.Path(__file__).resolve().parent / "outside"
MSE_SCALAR = str(OUTSIDE / "task_mse_scalar.py")
# the regression set: file -> task (every file's docstring names it too); *_cuda_* files run on a GPU only
REGRESSION = {
    "mse_loss_elementwise_then_mean.py": "level1/mse_loss",
    "hinge_loss_kernel_on_self.py": "level1/hinge_loss",
    "cross_entropy_soft_rows.py": "level1/cross_entropy_soft",
    "gemm_cross_entropy_linear_and_sum.py": "level2/gemm_cross_entropy",
    "mse_scalar_elementwise_then_mean.py": MSE_SCALAR,
    "mse_scalar_partials_sum_div.py": MSE_SCALAR,
    "huber_loss_cpp_wrapper_mean.py": "level1/huber_loss",
    "huber_loss_cuda_wrapper_mean.py": "level1/huber_loss",
}
CPP_ONLY = {"huber_loss_cpp_wrapper_mean.py"}  # C++ load_inline: built and run on cpu, judged dynamically
GPU_ONLY = {"huber_loss_cuda_wrapper_mean.py"}
# the policy's patterns: (file, task, allowed, the allowance whose sentence a rejection quotes)
PATTERNS = [
    (OUTSIDE / "mse_loss_elementwise_then_mean.py", "level1/mse_loss", True, None),
    (OUTSIDE / "mse_scalar_elementwise_then_mean.py", MSE_SCALAR, True, None),
    (OUTSIDE / "mse_scalar_partials_sum_div.py", MSE_SCALAR, True, None),
    (OUTSIDE / "gemm_cross_entropy_linear_and_sum.py", "level2/gemm_cross_entropy", True, None),
    (GENUINE / "gemm_relu_library_gemm_standard.py", "level2/gemm_relu", True, None),
    (GENUINE / "relu_zeros_positive_store.py", "level1/relu", True, None),
    (ATTACKS / "01_library_gemm_whole_task.py", "level1/matmul", False, library_policy.LIBRARY_GEMM),
    (OUTSIDE / "forbidden_reduction_is_the_task.py", "level1/sum_reduce", False, library_policy.FINAL_REDUCTION),
    (OUTSIDE / "forbidden_reduction_not_final.py", "level1/mse_loss", False, library_policy.FINAL_REDUCTION),
    (OUTSIDE / "forbidden_reduction_not_in_reference.py", "level1/softmax", False, library_policy.FINAL_REDUCTION),
    (OUTSIDE / "forbidden_elementwise_beside_gemm.py", "level2/gemm_relu", False, None),
]


def test_every_outside_file_is_listed():
    listed = set(REGRESSION) | {p.name for p, *_ in PATTERNS if p.parent == OUTSIDE} | {"task_mse_scalar.py"}
    assert {p.name for p in OUTSIDE.glob("*.py")} == listed


def _cpp_job(code: str, task_id: str):
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.tasks import load_task

    config = EvalConfig(device="cpu", checks="standard", compile_timeout_s=600, run_timeout_s=300)
    return job_for(load_task(task_id), code, backend="cuda", config=config)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(set(REGRESSION) - GPU_ONLY))
def test_outside_style_solution_accepted_on_cpu(through_env, ah_evaluator, name):
    code, task = (OUTSIDE / name).read_text(), REGRESSION[name]
    if name in CPP_ONLY:  # (a C++-only solution is `no_kernel` statically: own kernels are CUDA or Triton)
        result = ah_evaluator.pool.evaluate(_cpp_job(code, task))
        assert result.correct and not result.hacks, f"{name}: {result.outcome.value} {result.message[:600]}"
        return
    info = through_env(code, task=task, checks="standard")
    where = f"{name}: {info['error']} {info['hacks']} {info['message'][:600]}"
    assert info["correct"] is True and info["hacks"] == [] and info["score"] > 0, where


def _pattern_id(p):
    return p[0].stem


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path, task, allowed, allowance", PATTERNS, ids=[_pattern_id(p) for p in PATTERNS])
def test_lint_the_op_audit_and_eval_agree_on_every_policy_pattern(through_env, bypass, path, task, allowed,
                                                                   allowance):
    from kernel_gym.commands.lint import lint
    from kernel_gym.tasks import load_task

    code = path.read_text()
    static = lint(code, task=load_task(task), checks="standard")
    dynamic = bypass(code, task=task, checks="standard")  # the pipeline with the static rules skipped
    env = through_env(code, task=task, checks="standard")  # what `kernel-gym eval` does: both
    verdicts = {"lint": static["ok"], "op_audit": dynamic.correct and not dynamic.hacks, "eval": env["correct"]}
    assert set(verdicts.values()) == {allowed}, (verdicts, static["violations"], dynamic.hacks, dynamic.message[:600])
    if allowed:
        return
    assert static["hacks"] == ["library_op"] and dynamic.hacks == ("torch_compute",), (static, dynamic.hacks)
    sentence = (allowance or library_policy.ALLOCATION).sentence  # (any other compute: the whole list is quoted)
    assert sentence in static["violations"][0]["message"] and sentence in dynamic.message, (
        static["violations"][0]["message"], dynamic.message)
    assert sentence in env["feedback"]


def test_the_prompt_states_the_policy_in_the_same_words():
    from kernel_gym.feedback.render import RULES_BY_PRESET

    for a in library_policy.allowances("standard"):
        assert a.sentence in RULES_BY_PRESET["standard"]
