"""The judge's input seeds: one named stream per use, each salted with the job's secret (never sent to a runner).

`seed_for(base, salt, stream, i)` = (base * 1_000_003 + 7919 * (offset + i + 1) + salt) mod 2^31, where `offset`
is the stream's. Streams are far apart, so no two calls of a job share inputs.
"""

from __future__ import annotations

STREAMS: dict[str, int] = {
    "probe": -2,  # the reference's first call: learns the outputs' structure
    "first_call": -1,  # the candidate's first call (Triton JIT, load_inline builds)
    "trial": 0,  # correctness trials 0, 1, 2, ...
    "distribution": 5_000,  # the x16 trial
    "profile": 6_000,  # the profiled call (cuda)
    "audit": 7_000,  # the op-audited call
    "reuse": 8_000,  # the reused-buffers call (8_000) and its refill (8_001)
    "ablation": 10_000,  # the decoy ablation trial
    "alt_shape": 20_000,  # the second shape's trial
    "warmup": 30_000,  # untimed calls before timing
    "busy": 35_000,  # the reference kept busy before timing
    "calibration": 38_000,  # the clock's calibration calls (no work: only their shapes matter)
    "timed": 40_000,  # timed round r
    "after_timing": 50_000,  # the audited call after timing
    "signals": 60_000,  # the reference's FLOP/byte count
}


def seed_for(base: int, salt: int, stream: str, i: int = 0) -> int:
    return (base * 1_000_003 + 7919 * (STREAMS[stream] + i + 1) + salt) % (2**31)
