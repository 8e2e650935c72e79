"""End-to-end on an NVIDIA GPU: Triton and CUDA (load_inline) solutions, a poisoned CUDA context."""

from pathlib import Path

import gymnasium as gym
import pytest

import kernel_gym  # noqa: F401

pytestmark = pytest.mark.gpu
SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"


def respond(path: Path) -> str:
    return "Reasoning about the kernel.\n```python\n" + path.read_text() + "```\n"


@pytest.fixture(scope="module")
def env():
    env = gym.make("KernelRefine-v0", task="level1/relu", device="cuda", max_turns=8, compile_timeout_s=600)
    env.reset(seed=0)
    yield env
    env.close()


def test_triton_solution_correct_and_timed(env):
    _, reward, _, _, info = env.step(respond(SOLUTIONS / "level1_relu.py"))
    assert info["correct"], info["feedback"]
    assert info["timing"]["method"] == "judge_cuda_events+gate"
    assert info["runtime_ms"] > 0.05 and info["baseline_ms"] > 0.05
    assert reward == pytest.approx(0.3 + info["speedup"])


def test_cuda_load_inline_solution_correct_and_timed(env):
    _, reward, _, _, info = env.step(respond(SOLUTIONS / "cuda" / "level1_relu.py"))
    assert info["backend"] == "cuda"
    assert info["correct"], info["feedback"]
    assert info["speedup"] > 0.3
    assert reward == pytest.approx(0.3 + info["speedup"])


def test_illegal_memory_access_is_crash_and_next_step_works(env):
    _, reward, _, _, info = env.step(respond(SOLUTIONS / "cuda" / "illegal_access.py"))
    assert info["error"] == "crash", info["feedback"]
    assert reward == 0.0
    assert "illegal memory access" in info["feedback"].lower() or "cuda error" in info["feedback"].lower()
    _, _, _, _, info = env.step(respond(SOLUTIONS / "level1_relu.py"))
    assert info["correct"], info["feedback"]


@pytest.mark.parametrize("name", ["level1_softmax", "level1_matmul", "level2_gemm_relu", "level2_conv_relu_pool"])
def test_suite_solutions_on_gpu(name):
    task = name.replace("_", "/", 1)
    env = gym.make("KernelRefine-v0", task=task, device="cuda", max_turns=1, compile_timeout_s=600)
    env.reset(seed=1)
    try:
        _, _, _, _, info = env.step(respond(SOLUTIONS / f"{name}.py"))
    finally:
        env.close()
    assert info["correct"], info["feedback"]
    assert info["baseline_ms"] > 0.1, "tasks are sized so the reference runs above 0.1 ms on the GPU"


def test_cuda_decoy_is_caught_by_the_profiler_share():
    env = gym.make("KernelRefine-v0", task="level1/relu", device="cuda", max_turns=1, checks="permissive",
                   compile_timeout_s=600)
    env.reset(seed=2)
    try:
        _, reward, _, _, info = env.step(respond(SOLUTIONS / "cuda" / "decoy_relu.py"))
    finally:
        env.close()
    assert info["hacks"] == ["library_time"], info["feedback"]
    assert reward == 0.0
