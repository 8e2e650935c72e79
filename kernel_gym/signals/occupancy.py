"""Theoretical occupancy: how many warps of a kernel an SM can hold at once, as a share of its maximum.

The rules are the CUDA occupancy calculator's (`cuda_occupancy.h`, `cudaOccupancyMaxActiveBlocksPerMultiprocessor`):

    warps/block   = ceil(threads / 32)
    regs/warp     = ceil(regs_per_thread * 32 / 256) * 256           (allocation unit 256 registers a warp)
    blocks (regs) = floor(floor((65536 / 4) / regs/warp) * 4 / warps/block)   (a quarter of the file per scheduler)
    smem/block    = ceil((static + dynamic + 1024 reserved) / 128) * 128
    blocks (smem) = floor(228 KB / smem/block)
    blocks (warps)= floor(64 / warps/block);   blocks (cap) = 32
    blocks        = min of the four;  occupancy = blocks * warps/block / 64

(sm_90 numbers; other capabilities change the constants, see `hardware.SM_LIMITS`). A block needing more
registers or shared memory than a block may have cannot launch: occupancy 0, limiter "launch".

Worked examples on sm_90 (they are the unit tests):
- 32 regs, 256 threads, no smem: 1024 regs/warp, 16 warps per scheduler, 64 warps -> 8 blocks -> 100 %.
- 64 regs, 256 threads: 2048 regs/warp -> 8 warps per scheduler -> 32 warps -> 4 blocks -> 50 %.
- 128 regs, 256 threads: 4096 regs/warp -> 16 warps -> 2 blocks -> 25 %.
- 40 regs, 256 threads: 1280 regs/warp -> 12 warps per scheduler -> 48 warps -> 6 blocks -> 75 %.
- 66 regs, 256 threads: 2112 -> 2304 regs/warp -> 7 warps per scheduler -> 28 warps -> 3 blocks -> 37.5 %.
- 32 regs, 32 threads: the 32-blocks cap binds -> 32 warps -> 50 %.
- 32 regs, 256 threads, 48 KB smem: 50176 B/block -> 4 blocks -> 50 % (limited by shared memory).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel_gym.signals.hardware import DEFAULT, SmLimits


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps per SM, the occupancy (active / max warps) and what limits it."""

    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float
    limiter: str  # "registers", "shared_memory", "warps", "blocks", or "launch" (the block cannot launch)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(regs_per_thread: int, threads_per_block: int, smem_per_block: int = 0,
              sm: SmLimits | None = None) -> Occupancy:
    """Theoretical occupancy of a kernel using `regs_per_thread` registers and `smem_per_block` bytes of shared
    memory (static + dynamic), launched with `threads_per_block` threads, on an SM with limits `sm` (sm_90)."""
    sm = sm or DEFAULT.sm
    if threads_per_block <= 0 or regs_per_thread < 0 or smem_per_block < 0:
        raise ValueError(f"bad launch figures: {regs_per_thread} regs, {threads_per_block} threads, "
                         f"{smem_per_block} B smem")
    warps = -(-threads_per_block // sm.warp_size)
    regs_warp = _round_up(max(regs_per_thread, 1) * sm.warp_size, sm.reg_alloc_unit)
    # The hardware check assumes a block's warps are spread over all schedulers at once.
    regs_block = regs_warp * _round_up(warps, sm.sub_partitions)
    smem_block = _round_up(smem_per_block + sm.smem_reserved_per_block, sm.smem_alloc_unit)
    if (threads_per_block > sm.max_threads_per_block or regs_per_thread > sm.max_regs_per_thread
            or regs_block > sm.regs_per_block or smem_per_block > sm.smem_per_block):
        return Occupancy(0, 0, 0.0, "launch")
    warps_per_partition = (sm.regs_per_sm // sm.sub_partitions) // regs_warp
    limits = {
        "registers": warps_per_partition * sm.sub_partitions // warps,
        "shared_memory": sm.smem_per_sm // smem_block,
        "warps": sm.max_warps_per_sm // warps,
        "blocks": sm.max_blocks_per_sm,
    }
    limiter = min(limits, key=lambda k: (limits[k], k != "warps"))  # on a tie, name "warps" (full use)
    blocks = limits[limiter]
    return Occupancy(blocks, blocks * warps, blocks * warps / sm.max_warps_per_sm, limiter)
