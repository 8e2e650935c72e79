"""The raw-CUDA path on an NVIDIA GPU: NVRTC kernels launched through the driver on torch's stream, judged by the
same correctness, timing and anti-hack stages as every other backend."""

from __future__ import annotations

import secrets
from pathlib import Path

import gymnasium as gym
import pytest

import kernel_gym  # noqa: F401

pytestmark = pytest.mark.gpu
SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions" / "cuda_raw"


def respond(code: str) -> str:
    return "Raw CUDA.\n```python\n" + code + "```\n"


def run(task: str, code: str, **kw) -> dict:
    env = gym.make("KernelRefine-v0", task=task, device="cuda", max_turns=1, **kw)
    try:
        env.reset(seed=0)
        return env.step(respond(code))[4]
    finally:
        env.close()


@pytest.mark.parametrize("task, name", [("level1/relu", "level1_relu.py"), ("level1/softmax", "level1_softmax.py")])
def test_raw_solutions_are_correct_and_timed(task, name):
    info = run(task, (SOLUTIONS / name).read_text())
    assert info["backend"] == "cuda_raw"
    assert info["correct"], info["feedback"]
    assert info["timing"]["method"] == "judge_cuda_events+gate"
    assert info["speedup"] > 0.3
    assert info["signals"].get("own_kernel_time_share", 0) > 0.9
    assert info["signals"].get("regs_max", 0) > 0 and info["signals"].get("occupancy", 0) > 0


def test_cold_raw_compile_is_under_a_second():
    # a fresh comment makes the source new to every cache: this is a cold NVRTC compile in a warm worker
    code = (SOLUTIONS / "level1_relu.py").read_text().replace('SOURCE = r"""', f'SOURCE = r"""// {secrets.token_hex(8)}')
    info = run("level1/relu", code)
    assert info["correct"], info["feedback"]
    assert info["stage_ms"]["compile"] < 1000, info["stage_ms"]


def test_raw_decoy_kernel_is_caught():
    info = run("level1/relu", (SOLUTIONS / "decoy_relu.py").read_text(), checks="permissive")
    assert not info["correct"] and info["score"] == 0.0
    assert info["hacks"] and info["hacks"][0] in ("decoy_kernel", "library_time"), info["feedback"]


def test_wrong_dtype_pointer_is_a_clear_runtime_error():
    code = (SOLUTIONS / "level1_relu.py").read_text().replace("y = torch.empty_like(x)",
                                                                  "y = torch.empty_like(x, dtype=torch.float64)")
    info = run("level1/relu", code)
    assert info["error"] == "runtime_error"
    assert "`float*` but the tensor is torch.float64" in info["feedback"]


def test_out_of_bounds_raw_kernel_is_a_crash_and_the_env_recovers():
    bad = (SOLUTIONS / "level1_relu.py").read_text().replace("y[i] = v > 0.f ? v : 0.f;",
                                                             "y[i + (1LL << 40)] = v > 0.f ? v : 0.f;")
    env = gym.make("KernelRefine-v0", task="level1/relu", device="cuda", max_turns=2)
    try:
        env.reset(seed=0)
        info = env.step(respond(bad))[4]
        assert info["error"] == "crash", info["feedback"]
        info = env.step(respond((SOLUTIONS / "level1_relu.py").read_text()))[4]
        assert info["correct"], info["feedback"]
    finally:
        env.close()
