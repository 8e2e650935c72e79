"""C→CUDA tasks on an NVIDIA GPU: correct CUDA solutions agree with the C reference, a wrong one is a mismatch,
`speedup` is against the PyTorch baseline and the C reference time is reported."""

from pathlib import Path

import gymnasium as gym
import pytest

import kernel_gym  # noqa: F401

pytestmark = pytest.mark.gpu
SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions" / "c2cuda"
CUDA_SOLUTIONS = sorted(p.stem.removesuffix("_cuda") for p in SOLUTIONS.glob("*_cuda.py"))


def step(task: str, code: str, **kwargs) -> dict:
    env = gym.make("KernelRefine-v0", task=task, device="cuda", max_turns=1, compile_timeout_s=600, **kwargs)
    try:
        env.reset(seed=0)
        return env.step("A kernel.\n```python\n" + code + "\n```\n")[4]
    finally:
        env.close()


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", CUDA_SOLUTIONS)
def test_cuda_solution_matches_the_c_reference(name):
    info = step(f"c2cuda/{name}", (SOLUTIONS / f"{name}_cuda.py").read_text())
    assert info["backend"] == "cuda"
    assert info["correct"] and not info["hacks"], info["feedback"]
    assert info["timing"]["method"] == "judge_cuda_events+gate"
    assert info["speedup"] == pytest.approx(info["baseline_ms"] / info["runtime_ms"], rel=1e-6)
    signals = info["signals"]
    assert signals["c_reference_ms"] > 0
    assert signals["speedup_vs_c"] == pytest.approx(signals["c_reference_ms"] / info["runtime_ms"], rel=1e-3)
    assert signals["speedup_vs_c"] > info["speedup"], "single-threaded C is slower than the PyTorch GPU baseline"


@pytest.mark.timeout(900)
def test_wrong_cuda_solution_is_a_mismatch():
    code = (SOLUTIONS / "saxpy_cuda.py").read_text().replace("out[i] = a * x[i] + y[i];", "out[i] = a * x[i] - y[i];")
    info = step("c2cuda/saxpy", code)
    assert not info["correct"] and info["error"] == "mismatch", info["feedback"]


@pytest.mark.timeout(600)
def test_triton_solution_runs_on_the_gpu_too():
    info = step("c2cuda/saxpy", (SOLUTIONS / "saxpy_triton.py").read_text())
    assert info["correct"], info["feedback"]


def test_raw_cuda_solution_matches_the_c_reference():
    info = step("c2cuda/saxpy", (SOLUTIONS / "saxpy_raw.py").read_text())
    assert info["backend"] == "cuda_raw"
    assert info["correct"] and not info["hacks"], info["feedback"]
    assert info["signals"]["speedup_vs_c"] > 1.0
