"""The raw-CUDA solution format (kernel_gym.cuda_raw) on the CPU backend: NVRTC compiles for sm_90 without a GPU,
so parsing, compile errors, the cubin cache, backend detection, static checks and the env's verdicts are real here;
running the kernels is covered by tests/gpu/test_cuda_raw_gpu.py."""

from __future__ import annotations

import time
from pathlib import Path

import gymnasium as gym
import pytest

import kernel_gym  # noqa: F401
from kernel_gym import cuda_raw
from kernel_gym.actions import detect_backend, parse_action
from kernel_gym.checks import run_static_checks

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions" / "cuda_raw"
RELU = (SOLUTIONS / "level1_relu.py").read_text()


def respond(code: str) -> str:
    return "A raw CUDA kernel.\n```python\n" + code + "```\n"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_GYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cuda_raw, "_MEMO", {})
    monkeypatch.setattr(cuda_raw, "TARGET_DEVICE", "cpu")


def test_signatures_are_read_from_the_source():
    sigs = cuda_raw.kernel_signatures(r'''
        // __global__ void commented_out(int n)
        extern "C" __global__ void __launch_bounds__(256) scale(const float* __restrict__ x, float* y,
                                                               int n, unsigned long long m, double a) {}
        __global__ void nothing(void) {}
        /* __global__ void also_commented(float* x) {} */
    ''')
    assert set(sigs) == {"scale", "nothing"}
    assert [(p.name, p.ctype, p.pointer) for p in sigs["scale"]] == [
        ("x", "float", True), ("y", "float", True), ("n", "int", False), ("m", "unsigned long long", False),
        ("a", "double", False)]
    assert sigs["nothing"] == ()


def test_compile_without_a_gpu_checks_the_source_then_says_no_device():
    source = RELU.split('r"""')[1].split('"""')[0]
    t0 = time.perf_counter()
    with pytest.raises(cuda_raw.NoCudaDevice) as e:
        cuda_raw.compile(source)
    cold = time.perf_counter() - t0
    module = e.value.module
    assert module.kernel_names == ["relu_kernel"] and module.arch == "sm_90"
    assert module.cubin[:4] == b"\x7fELF" and module.cubin_path.exists()
    assert cold < 5.0, f"NVRTC took {cold:.2f} s"  # ~0.05 s here; the raw path's point is a sub-second compile


def test_cubin_cache_hits_and_is_invalidated_by_source_and_options(monkeypatch):
    source = 'extern "C" __global__ void k(float* y) { y[0] = 1.f; }'
    calls = []
    real = cuda_raw.compile_program
    monkeypatch.setattr(cuda_raw, "compile_program", lambda *a: calls.append(a) or real(*a))

    def build(src, options=()):
        with pytest.raises(cuda_raw.NoCudaDevice) as e:
            cuda_raw.compile(src, options=options)
        return e.value.module

    first = build(source)
    cuda_raw._MEMO.clear()  # a fresh worker: the disk cache answers
    again = build(source)
    assert len(calls) == 1 and again.cubin == first.cubin and again is not first
    build(source.replace("1.f", "2.f"))
    build(source, options=("-DSOMETHING=1",))
    assert len(calls) == 3


def test_cpp_kernel_names_resolve_to_their_lowered_symbols():
    with pytest.raises(cuda_raw.NoCudaDevice) as e:
        cuda_raw.compile("__global__ void mangled(float* y, int n) { if (n) y[0] = 0.f; }")
    assert e.value.module._lowered["mangled"].startswith("_Z")


def test_common_nvcc_names_work_without_standard_headers():
    src = r'''
    #include <cstdint>
    #include <cfloat>
    #include <cuda_fp16.h>
    extern "C" __global__ void k(float* y, const __half* h, int64_t n) {
        float m = -INFINITY; m = fmaxf(m, FLT_MAX); uint32_t u = INT_MAX;
        if (n > 0) y[0] = m + (float)u + __half2float(h[0]) + M_PI;
    }'''
    with pytest.raises(cuda_raw.NoCudaDevice):
        cuda_raw.compile(src)


def test_compile_error_carries_nvrtc_log():
    with pytest.raises(cuda_raw.CompileError) as e:
        cuda_raw.compile('extern "C" __global__ void k(float* y) { y[0] = undefined_name; }')
    assert "undefined_name" in e.value.log and "cuda_source(1)" in e.value.log
    with pytest.raises(cuda_raw.CompileError, match="no __global__"):
        cuda_raw.compile("int x;")


def test_backend_detection_and_parse():
    assert detect_backend(RELU) == "cuda_raw"
    assert detect_backend("import kernel_gym.cuda_raw as raw\nclass ModelNew: pass") == "cuda_raw"
    parsed = parse_action(respond(RELU), backend="cuda_raw")
    assert parsed.ok and parsed.backend == "cuda_raw"
    assert "expects a cuda_raw solution" in parse_action(
        respond((Path(__file__).parents[1] / "solutions" / "level1_relu.py").read_text()), backend="cuda_raw").error


@pytest.mark.parametrize("preset", ["strict", "kevin-strict", "standard", "permissive"])
def test_genuine_raw_solutions_pass_the_static_rules(preset):
    for name in ("level1_relu.py", "level1_softmax.py"):
        code = (SOLUTIONS / name).read_text()
        assert run_static_checks(code, preset, backend="cuda_raw") == [], name


def test_launch_bounds_kernels_count_as_launched():
    """The static rules know a raw module's kernels by the same parser the module uses (__launch_bounds__ too)."""
    bounded = RELU.replace('extern "C" __global__ void relu_kernel',
                           'extern "C" __global__ void __launch_bounds__(256) relu_kernel')
    assert run_static_checks(bounded, "strict", backend="cuda_raw") == []


def test_static_rules_still_apply_to_raw_solutions():
    never_launched = RELU.replace("kernels.relu_kernel(x, y, n, grid=blocks, block=threads)", "y = torch.relu(x)")
    rules = {v.rule for v in run_static_checks(never_launched, "standard", backend="cuda_raw")}
    assert "no_kernel" in rules
    patched = RELU.replace("kernels = cuda_raw.compile(SOURCE)",
                           "kernels = cuda_raw.compile(SOURCE)\ncuda_raw.TARGET_DEVICE = 'cuda'")
    assert "monkeypatch" in {v.rule for v in run_static_checks(patched, "standard", backend="cuda_raw")}
    harness = "from kernel_gym.harness import launches\n" + RELU
    assert "monkeypatch" in {v.rule for v in run_static_checks(harness, "standard", backend="cuda_raw")}
    decoy = (SOLUTIONS / "decoy_relu.py").read_text()
    assert run_static_checks(decoy, "standard", backend="cuda_raw")  # torch.relu is compute under standard


@pytest.fixture(scope="module")
def cpu_env():
    env = gym.make("KernelRefine-v0", task="level1/relu", device="cpu", max_turns=4)
    env.reset(seed=0)
    yield env
    env.close()


def test_env_cpu_backend_compiles_and_reports_unsupported(cpu_env):
    _, reward, _, _, info = cpu_env.step(respond(RELU))
    assert info["backend"] == "cuda_raw" and info["error"] == "unsupported" and reward == 0.0
    assert info["compiled"] is True
    assert "NVRTC" in info["feedback"]
    assert info["signals"].get("regs_max", 0) > 0  # resources read from the cubin (cuobjdump)


def test_env_cpu_backend_compile_error_feedback(cpu_env):
    _, reward, _, _, info = cpu_env.step(respond((SOLUTIONS / "compile_error.py").read_text()))
    assert info["error"] == "compile_error" and reward == 0.0
    assert "zero_value" in info["feedback"]


def test_c_task_with_a_raw_cuda_solution_on_the_cpu_backend():
    env = gym.make("KernelRefine-v0", task="c2cuda/saxpy", device="cpu", backend="cuda_raw", max_turns=1)
    try:
        obs, _ = env.reset(seed=0)
        assert "cuda_raw.compile" in obs  # the C-task prompt documents the raw format for this backend
        info = env.step(respond((SOLUTIONS.parent / "c2cuda" / "saxpy_raw.py").read_text()))[4]
    finally:
        env.close()
    assert info["backend"] == "cuda_raw" and info["error"] == "unsupported" and "NVRTC" in info["feedback"]
