"""On an NVIDIA GPU: compile-time figures of Triton and CUDA kernels, and the roofline of a bandwidth-bound copy."""

from pathlib import Path

import gymnasium as gym
import pytest
import triton
import triton.language as tl

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


@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def test_triton_compile_path_finds_the_kernel_the_jit_loaded():
    """The recorded launch, compiled again (Triton's cache), is the very variant the JIT loaded; ptxas on its PTX
    reports the driver's register count."""
    import torch

    from kernel_gym.signals.resources import ptx_resources
    from kernel_gym.signals.triton_resources import _loaded, compile_launch, launch_resources, record_launches

    capability = 10 * torch.cuda.get_device_capability()[0] + torch.cuda.get_device_capability()[1]
    x = torch.randn(1 << 20, device="cuda")
    y = torch.empty_like(x)
    with record_launches() as seen:
        _relu[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024, num_warps=4)
    torch.cuda.synchronize()
    (launch,) = seen.values()
    compiled = compile_launch(launch, capability)
    loaded = _loaded(launch, compiled.metadata.hash)
    assert loaded is not None
    (k,) = launch_resources(launch, capability)
    assert (k.regs, k.spill_bytes, k.threads) == (loaded.n_regs, 4 * loaded.n_spills, 128)
    assert ptx_resources(compiled.asm["ptx"])[0].regs == loaded.n_regs


def test_copy_bandwidth_of_this_gpu_is_near_its_spec():
    from kernel_gym.signals.hardware import current_spec, measure_copy_bandwidth

    spec = current_spec()
    if spec is None:
        pytest.skip("this GPU is not in kernel_gym.signals.hardware.SPECS")
    assert 0.8 * spec.bandwidth < measure_copy_bandwidth() < 1.2 * spec.bandwidth


def test_triton_relu_is_near_the_bandwidth_roof(env):
    _, _, _, _, info = env.step(respond(SOLUTIONS / "level1_relu.py"))
    assert info["correct"], info["feedback"]
    s = info["signals"]
    print(info["feedback"], info["stage_ms"], s, sep="\n")
    assert s["task_bytes"] == 2 * 8192 * 16384 * 4 and s["task_flops"] == 0
    assert 0.5 < s["bandwidth_util"] < 1.1, s  # a streaming kernel runs near the copy bandwidth
    assert s["roofline_util"] == pytest.approx(s["bandwidth_util"], rel=1e-3) and s["roofline_violation"] == 0.0
    assert 8 <= s["regs_max"] <= 128 and s["spill_bytes_max"] == 0 and s["occupancy_block_threads"] == 256
    assert 0 < s["occupancy"] <= 1 and s["target_sm"] == 90
    assert "TB/s" in info["feedback"] and "Profile (sm_90): 1 kernel" in info["feedback"]


def test_cuda_relu_registers_come_from_the_built_extension(env):
    _, _, _, _, info = env.step(respond(SOLUTIONS / "cuda" / "level1_relu.py"))
    assert info["correct"], info["feedback"]
    s = info["signals"]
    print(info["feedback"], info["stage_ms"], s, sep="\n")
    assert s["kernels_profiled"] == 1 and 4 <= s["regs_max"] <= 40 and s["occupancy_block_threads"] == 256
    assert s["occupancy"] == 1.0 and 0.3 < s["bandwidth_util"] < 1.1, s
