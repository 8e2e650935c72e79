"""The signals through the env on the CPU backend: info["signals"], the feedback's profile, the cudaperf preset."""

import pytest

from kernel_gym.signals.resources import find_tool

HELPER = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu(x):
    return tl.maximum(x, 0.0)


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, _relu(tl.load(x_ptr + offs, mask=mask)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024, num_warps=4)
        return y
'''

# CUDA kernels in cuda_sources with no torch headers (the nvcc check takes ~1 s), the torch wrapper in cpp_sources.
CUDA_SOLUTION = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
void relu_launch(const float* x, float* y, int n) {
    const int threads = 512;
    relu_kernel<<<(n + threads - 1) / threads, threads>>>(x, y, n);
}
"""
cpp_src = r"""
#include <torch/extension.h>
void relu_launch(const float* x, float* y, int n);
torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    relu_launch(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
"""
ext = load_inline("relu_signals", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x.contiguous())
'''


def test_triton_solution_gets_structure_resources_and_task_counts(make_env, respond, solution):
    env = make_env()
    env.reset(seed=0)
    _, _, _, _, info = env.step(respond(solution("level1/relu")))
    assert info["correct"], info["feedback"]
    s = info["signals"]
    assert s["struct_coalesced"] == 1.0 and s["struct_uncoalesced"] == 0.0 and s["struct_tensor_cores"] == 0.0
    assert s["target_sm"] == 90 and 8 <= s["regs_max"] <= 96 and s["spill_bytes_max"] == 0
    assert s["occupancy_block_threads"] == 256 and 0 < s["occupancy"] <= 1  # num_warps=8
    assert s["task_bytes"] > 0 and s["task_flops"] == 0
    assert "roofline_util" not in s and "achieved_bandwidth" not in s  # no roofline on the CPU backend
    assert "kernel_signals" in info["stage_ms"] and "roofline_signals" in info["stage_ms"]
    assert "\nProfile (sm_90): 1 kernel, " in info["feedback"]


def test_kernels_calling_jit_helpers_compile_under_the_interpreter(make_env, respond):
    env = make_env()
    env.reset(seed=0)
    _, _, _, _, info = env.step(respond(HELPER))
    assert info["correct"], info["feedback"]
    assert info["signals"]["regs_max"] > 0 and info["signals"]["occupancy_block_threads"] == 128


def test_incorrect_solutions_get_no_profile(make_env, respond, relu_code):
    env = make_env()
    env.reset(seed=0)
    _, _, _, _, info = env.step(respond(relu_code(body="tl.maximum(x, 1.0)")))
    assert info["error"] == "mismatch"
    assert "regs_max" not in info["signals"] and "Profile" not in info["feedback"]


def test_cudaperf_preset_rewards_roofline_and_structure_terms(make_env, respond, solution):
    env = make_env(preset="cudaperf")
    env.reset(seed=0)
    _, reward, _, _, info = env.step(respond(solution("level1/relu")))
    terms = info["reward_terms"]
    assert {"roofline_util", "occupancy", "struct_coalesced", "roofline_violation"} <= set(terms)
    assert terms["occupancy"] == info["signals"]["occupancy"] and terms["roofline_util"] == 0.0  # cpu
    expected = 0.3 + info["speedup"] + 0.05 * terms["occupancy"] + 0.05 * terms["struct_coalesced"]
    assert reward == pytest.approx(expected)


def test_cuda_solution_on_cpu_gets_compile_time_signals(make_env, respond):
    if find_tool("nvcc") is None or find_tool("cuobjdump") is None:
        pytest.skip("needs nvcc and cuobjdump")
    env = make_env(backend="cuda")
    env.reset(seed=0)
    _, _, _, _, info = env.step(respond(CUDA_SOLUTION))
    assert info["error"] == "unsupported", info["feedback"]
    s = info["signals"]
    assert s["kernels_profiled"] == 1 and s["regs_max"] <= 32 and s["occupancy"] == 1.0
    assert s["occupancy_block_threads"] == 512 and s["struct_coalesced"] == 1.0
    assert "Profile (sm_90): 1 kernel" in info["feedback"]
