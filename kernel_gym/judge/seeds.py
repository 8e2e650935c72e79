"""The judge's input seeds: one named stream per use; with secret seeds (the default), one fresh key per job.

A job's key is 128 bits from the OS's CSPRNG (`new_key()`, made in the judge, never sent to a runner). The seed of
call `i` of `stream` is HMAC-SHA256(key, "base:stream:i") cut to 63 bits: every call's seed is a pseudo-random
function of the key alone, so knowing the seeds (or the inputs) of every earlier call gives nothing about the next
one, and two jobs share no seed but by chance. (The seed it replaced, (base*1_000_003 + 7919*(offset+i+1) + salt)
mod 2^31, put each call a fixed offset from a 31-bit salt: a candidate brute-forced the salt from its first input and
then knew every later input.)

What torch keeps of a seed: `torch.manual_seed` takes up to 2^64 - 1. The CUDA generator (Philox) keeps all 64 bits.
The CPU generator (MT19937) keeps only the low 32 bits (`mt19937_engine::init_with_uint32`: `state_[0] = seed &
0xffffffff`), so on cpu a call's inputs come from one of 2^32 streams: a candidate may find the seed of the call it
is answering by brute force, which tells it that call's inputs (it has them) and nothing about any other call's,
since no seed is derived from another. Two calls of one cpu job land on the same 32 bits with a chance of about
n^2 / 2^33 (n ~ 400 calls: ~2e-5), which costs at most a weaker cache check for that job, never a wrong verdict.

Without secret seeds (`EvalConfig(secret_seeds=False)`: reproducible runs, tests, the documented control runs of the
attack suite) the salt is the int 0 and the seed is the old public formula above, with `offset` the stream's below:
streams are far apart, so no two calls of a job share inputs.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

KEY_BYTES = 16  # 128 bits
SEED_BITS = 63

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


def new_key() -> bytes:
    """A fresh secret key for one job (128 bits)."""
    return secrets.token_bytes(KEY_BYTES)


def keyed_seed(key: bytes, base: int, stream: str, i: int = 0) -> int:
    """HMAC-SHA256(key, "base:stream:i") cut to 63 bits."""
    if stream not in STREAMS:
        raise KeyError(stream)
    digest = hmac.new(key, f"{base}:{stream}:{i}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << SEED_BITS) - 1)


def seed_for(base: int, salt: int | bytes, stream: str, i: int = 0) -> int:
    """Call `i` of `stream`: keyed (`salt` a job's key from `new_key()`), or the public formula (`salt` an int: 0 when
    seeds are not secret)."""
    if isinstance(salt, bytes):
        return keyed_seed(salt, base, stream, i)
    return (base * 1_000_003 + 7919 * (STREAMS[stream] + i + 1) + salt) % (2**31)
