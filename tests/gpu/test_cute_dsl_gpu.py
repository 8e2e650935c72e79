"""backend="cute_dsl" on an NVIDIA GPU (issue 39): CuTe DSL kernels judged by the same correctness, timing and
anti-hack stages as every other backend. NEVER RUN YET: written on the CPU machine, where
tests/checks/test_checks_cute_dsl.py compiles these same solutions for sm_90a (traced, lowered, built to a cubin)
but nothing can execute them. Expect to adjust what a first GPU run shows (the launch hooks of
kernel_gym/harness/dsl_launches.py, the kernels' names in the profiler, the bf16 GEMM's numerics)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import kernel_gym  # noqa: F401

pytestmark = pytest.mark.gpu
pytest.importorskip("cutlass.cute")
CUTE = Path(__file__).resolve().parents[1] / "cute_dsl"


def run(task: str, code: str, **kw) -> dict:
    env = gym.make("KernelRefine-v0", task=task, device="cuda", backend="cute_dsl", max_turns=1, **kw)
    try:
        env.reset(seed=0)
        return env.step("CuTe DSL.\n```python\n" + code + "```\n")[4]
    finally:
        env.close()


@pytest.mark.parametrize("task, name, kw", [
    ("level1/relu", "level1_relu.py", {}),  # elementwise
    ("level1/sum_reduce", "level1_sum_reduce.py", {}),  # reduction
    ("level1/matmul", "level1_matmul_bf16.py", {"precision": "bf16"}),  # bf16 GEMM on tensor cores (mma.sync)
])
def test_cute_dsl_solutions_are_correct_and_timed(task, name, kw):
    info = run(task, (CUTE / "solutions" / name).read_text(), **kw)
    assert info["backend"] == "cute_dsl" and info["correct"], info["feedback"]
    assert info["timing"]["method"].startswith("judge_cuda_events")
    assert info["signals"].get("own_launches_per_call", 0) >= 1  # the JitExecutor hook counted the launch
    assert info["signals"].get("own_kernel_time_share", 0) > 0.9  # the profiler knows `kernel_cutlass_*`
    assert info["signals"].get("regs_max", 0) > 0 and "occupancy" in info["signals"]  # dsl_resources, from its cubin
    assert info["speedup"] and info["speedup"] > 0


def test_hidden_library_gemm_is_rejected_by_the_dynamic_checks():
    code = (CUTE / "attacks" / "library_gemm_behind_copy.py").read_text()
    info = run("level1/matmul", code, checks="permissive", precision="bf16")
    assert not info["correct"] and info["hacks"][0] in ("library_time", "torch_compute"), info["feedback"]


def test_decoy_is_rejected():
    info = run("level1/relu", (CUTE / "attacks" / "decoy_scratch_kernel.py").read_text(), checks="permissive")
    assert not info["correct"] and info["hacks"][0] in ("decoy_kernel", "library_time"), info["feedback"]


def test_the_gemm_asked_for_at_fp32_is_a_precision_violation():
    info = run("level1/matmul", (CUTE / "solutions" / "level1_matmul_bf16.py").read_text())
    assert info["error"] == "rejected" and "precision" in info["hacks"]
