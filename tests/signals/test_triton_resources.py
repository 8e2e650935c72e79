"""Triton kernels compiled for sm_90 without a GPU (as the CPU backend does): registers, shared memory, threads."""

import pytest
import torch
import triton
import triton.language as tl

from kernel_gym.signals.collect import resource_signals
from kernel_gym.signals.triton_resources import Launch, from_jit_cache, launch_resources, triton_kernels


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _row_sum(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row, tl.sum(x, axis=0))


def test_copy_kernel_compiles_for_sm90():
    x = torch.empty(4096)
    (k,) = launch_resources(Launch(_copy, (x, x, 4096), {"BLOCK": 1024, "num_warps": 4}))
    assert k.name == "_copy" and k.threads == 128 and k.spill_bytes == 0 and k.smem == 0
    assert 8 <= k.regs <= 40  # 8 floats a thread in flight, addresses and the mask
    assert k.vector_share == 1.0  # 16-byte aligned pointers, n divisible by 16: vector loads and stores
    s = resource_signals([k])
    assert s["occupancy"] == 1.0 and s["occupancy_block_threads"] == 128


def test_a_cross_warp_reduction_uses_shared_memory():
    x = torch.empty(64 * 1000)
    (k,) = launch_resources(Launch(_row_sum, (x, x, 1000), {"BLOCK": 1024, "num_warps": 8}))
    assert k.threads == 256 and k.smem > 0  # partial sums of 8 warps meet in shared memory


def test_a_kernel_that_does_not_compile_is_left_out(caplog):
    x = torch.empty(16)
    bad = Launch(_copy, (x, x, 16), {"BLOCK": 1000})  # tl.arange needs a power of two
    assert triton_kernels({0: bad}) == []
    assert "no resources for Triton kernel _copy" in caplog.text
    assert from_jit_cache({0: bad}) == []  # nothing was ever loaded on a GPU here


@pytest.mark.parametrize("warps", [1, 4])
def test_threads_follow_num_warps(warps):
    x = torch.empty(4096)
    (k,) = launch_resources(Launch(_copy, (x, x, 4096), {"BLOCK": 512, "num_warps": warps}))
    assert k.threads == 32 * warps
