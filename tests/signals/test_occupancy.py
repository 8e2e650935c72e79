"""Theoretical occupancy against figures worked out by hand from NVIDIA's allocation rules (sm_90 unless named)."""

import pytest

from kernel_gym.signals.hardware import H200, SM_LIMITS, spec_for_name
from kernel_gym.signals.occupancy import occupancy


@pytest.mark.parametrize(("regs", "threads", "smem", "blocks", "occ", "limiter"), [
    (32, 256, 0, 8, 1.0, "warps"),            # 1024 regs/warp -> 16 warps/scheduler -> 64 warps: full
    (64, 256, 0, 4, 0.5, "registers"),        # 2048 regs/warp -> 8 per scheduler -> 32 warps
    (128, 256, 0, 2, 0.25, "registers"),      # 4096 regs/warp -> 4 per scheduler -> 16 warps
    (40, 256, 0, 6, 0.75, "registers"),       # 1280 regs/warp -> 12 per scheduler -> 48 warps
    (66, 256, 0, 3, 0.375, "registers"),      # 2112 -> 2304 regs/warp -> 7 per scheduler -> 28 warps -> 3 blocks
    (255, 128, 0, 2, 0.125, "registers"),     # 8160 -> 8192 regs/warp -> 2 per scheduler -> 8 warps
    (32, 32, 0, 32, 0.5, "blocks"),           # one warp a block: the 32-blocks cap
    (16, 1024, 0, 2, 1.0, "warps"),           # 32 warps a block, 2 blocks
    (32, 256, 48 * 1024, 4, 0.5, "shared_memory"),   # (48 KB + 1 KB reserved) -> 4 blocks in 228 KB
    (32, 128, 100 * 1024, 2, 0.125, "shared_memory"),
    (32, 100, 0, 16, 1.0, "warps"),           # 100 threads = 4 warps (rounded up): 16 blocks of 4 warps
])
def test_known_figures(regs, threads, smem, blocks, occ, limiter):
    o = occupancy(regs, threads, smem)
    assert (o.blocks_per_sm, o.occupancy, o.limiter) == (blocks, occ, limiter)
    assert o.warps_per_sm == blocks * -(-threads // 32)


@pytest.mark.parametrize(("regs", "threads", "smem"), [
    (255, 1024, 0),         # 8192 regs/warp * 32 warps > 65536 registers a block
    (32, 2048, 0),          # more than 1024 threads a block
    (32, 256, 228 * 1024),  # more than 227 KB shared memory a block
    (256, 32, 0),           # more than 255 registers a thread
])
def test_blocks_that_cannot_launch(regs, threads, smem):
    o = occupancy(regs, threads, smem)
    assert (o.blocks_per_sm, o.occupancy, o.limiter) == (0, 0.0, "launch")


def test_smaller_sm_limits():
    sm86 = SM_LIMITS[(8, 6)]  # 1536 threads (48 warps), 16 blocks, 100 KB
    o = occupancy(32, 256, 0, sm86)
    assert (o.blocks_per_sm, o.occupancy) == (6, 1.0)
    assert occupancy(32, 64, 0, sm86).occupancy == pytest.approx(32 / 48)  # 16-blocks cap, 2 warps each


def test_bad_figures_raise():
    with pytest.raises(ValueError):
        occupancy(32, 0)


def test_specs_by_device_name():
    assert spec_for_name("NVIDIA H200") is H200
    assert spec_for_name("NVIDIA H100 80GB HBM3").name == "H100"
    assert spec_for_name("NVIDIA GeForce RTX 4090") is None
    assert H200.peak_flops("float32") == 60e12
    assert H200.peak_flops("float32", allow_precision=True) == H200.flops["tf32"]
    assert H200.peak_flops("bfloat16") == 989e12
