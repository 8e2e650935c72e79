"""backend="helion" on an NVIDIA GPU (issue 39): Helion's generated Triton kernels judged by the same correctness,
timing and anti-hack stages as every other backend. Not yet run on a device (written on the CPU machine, where
tests/helion/test_helion_cpu.py runs the same solutions under Triton's interpreter)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import kernel_gym  # noqa: F401

pytestmark = pytest.mark.gpu
# Skips too where helion is installed but does not import against this torch (helion 1.5.1 on torch 2.11: an
# ImportError); pytest.importorskip skips only ModuleNotFoundError unless given exc_type=ImportError (pytest >= 8.2)
try:
    import helion  # noqa: F401
except ImportError as e:
    pytest.skip(f"helion does not import: {e}", allow_module_level=True)
HELION = Path(__file__).resolve().parents[1] / "helion"


def run(task: str, code: str, **kw) -> dict:
    env = gym.make("KernelRefine-v0", task=task, device="cuda", max_turns=1, **kw)
    try:
        env.reset(seed=0)
        return env.step("Helion.\n```python\n" + code + "```\n")[4]
    finally:
        env.close()


@pytest.mark.parametrize("task, name, kw", [
    ("level1/relu", "level1_relu.py", {}),
    ("level1/softmax", "level1_softmax.py", {}),
    ("level1/sum_reduce", "level1_sum_reduce.py", {}),
    ("level1/matmul", "level1_matmul.py", {}),
    ("level1/matmul", "level1_matmul_bf16.py", {"precision": "bf16"}),  # tensor-core dots
])
def test_helion_solutions_are_correct_and_timed(task, name, kw):
    info = run(task, (HELION / "solutions" / name).read_text(), **kw)
    assert info["backend"] == "helion" and info["correct"], info["feedback"]
    assert info["timing"]["method"].startswith("judge_cuda_events")
    assert info["signals"].get("own_kernel_time_share", 0) > 0.9  # the profiler knows the `_helion_*` kernels
    assert info["signals"].get("regs_max", 0) > 0


def test_library_in_host_code_is_rejected_by_the_dynamic_checks():
    info = run("level1/matmul", (HELION / "attacks" / "library_in_host_code.py").read_text(), checks="permissive")
    assert not info["correct"] and info["hacks"][0] in ("decoy_kernel", "library_time"), info["feedback"]


def test_decoy_is_rejected():
    info = run("level1/relu", (HELION / "attacks" / "decoy_scratch_kernel.py").read_text(), checks="permissive")
    assert not info["correct"] and info["hacks"][0] in ("decoy_kernel", "library_time"), info["feedback"]


def test_tf32_dots_on_fp32_are_caught_by_the_error_budget():
    code = (HELION / "solutions" / "level1_matmul.py").read_text().replace(', dot_precision="ieee"', "")
    info = run("level1/matmul", code)
    assert not info["correct"] and "dot_precision" in info["feedback"]  # a mismatch, with the hint
