"""Unpredictable inputs: each job draws a fresh 128-bit key, and every call's seed is an HMAC of it (judge/seeds.py).

The attack this stops (main 98d8a73): every call's seed sat a fixed offset (7919 per call) from a 31-bit per-job salt,
so a candidate that brute-forced the seed of its first input knew the seed, hence the input, of every later call, and
answered timed calls from a table. Here the attacker is granted that first seed outright and predicts the rest.
"""

from __future__ import annotations

import pytest
import torch

from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.judge.run import JudgeRun
from kernel_gym.judge.seeds import STREAMS, keyed_seed, seed_for
from kernel_gym.tasks import load_task

CALLS = [("first_call", 0), *(("trial", i) for i in range(3)), ("reuse", 0), ("reuse", 1),
         *(("timed", r) for r in range(6))]


def judge_run(**config) -> JudgeRun:
    job = job_for(load_task("level1/relu"), "", backend="triton", config=EvalConfig(device="cpu", **config))
    return JudgeRun(job, None, None)  # (no runner is asked anything: only the judge's own seeds and inputs)


def predict(first_seed: int, stream: str, i: int) -> int:
    """The attacker's prediction: the public formula's offset from the first call's seed."""
    return (first_seed + 7919 * (STREAMS[stream] + i - STREAMS["first_call"])) % 2**31


def test_each_job_draws_a_fresh_128_bit_key():
    a, b = judge_run(), judge_run()
    assert isinstance(a.secret.key, bytes) and len(a.secret.key) == 16
    assert a.secret.key != b.secret.key
    assert a.seed("trial", 0) != b.seed("trial", 0)
    assert all(0 <= a.seed(s, i) < 2**63 for s, i in CALLS)
    assert a.seed("timed", 3) == a.seed("timed", 3)  # within a job a call's seed is fixed (both sides, retakes)


def test_knowing_the_first_seed_predicts_no_later_call():
    """The salt-recovery attack, with the brute force done for it: the first call's seed is known. Every later
    seed missed the public formula's prediction (the seeds before this fix were all predicted)."""
    for _ in range(5):
        jr = judge_run()
        first = jr.seed("first_call")
        hits = [(s, i) for s, i in CALLS[1:] if jr.seed(s, i) == predict(first, s, i)
                or jr.seed(s, i) % 2**32 == predict(first, s, i)]  # (the cpu generator keeps the low 32 bits)
        assert not hits, hits


def test_seed_steps_vary_within_and_across_jobs():
    jobs = [judge_run() for _ in range(3)]
    steps = [[jr.seed("timed", r + 1) - jr.seed("timed", r) for r in range(5)] for jr in jobs]
    for s in steps:
        assert len(set(s)) == len(s), s  # no fixed step between consecutive calls of a job
    assert len({tuple(s) for s in steps}) == len(steps)  # nor the same steps in two jobs


def test_inputs_follow_the_seed_not_a_guess():
    """What the candidate would compute from its prediction is not the judge's next input."""
    jr = judge_run()
    first = jr.seed("first_call")
    actual = jr.inputs(jr.seed("timed", 0))[0]
    torch.manual_seed(predict(first, "timed", 0))
    guessed = torch.randn(actual.shape)
    assert not torch.equal(actual, guessed)
    assert torch.equal(actual, jr.inputs(jr.seed("timed", 0))[0])  # the judge's own pristine copy is reproducible


def test_without_secret_seeds_the_public_formula_is_kept():
    """`secret_seeds=False` (tests, the attack suite's control runs) keeps the old, reproducible seeds."""
    a, b = judge_run(secret_seeds=False, seed=3), judge_run(secret_seeds=False, seed=3)
    assert a.secret.key == 0
    assert [a.seed(s, i) for s, i in CALLS] == [b.seed(s, i) for s, i in CALLS]
    assert a.seed("trial", 2) == (3 * 1_000_003 + 7919 * 3) % 2**31 == seed_for(3, 0, "trial", 2)


def test_keyed_seed_is_an_hmac_of_key_base_stream_and_index():
    import hashlib
    import hmac

    key = bytes(range(16))
    digest = hmac.new(key, b"0:timed:7", hashlib.sha256).digest()
    assert keyed_seed(key, 0, "timed", 7) == int.from_bytes(digest[:8], "little") & (2**63 - 1)
    assert seed_for(0, key, "timed", 7) == keyed_seed(key, 0, "timed", 7)
    seeds = {keyed_seed(key, 0, s, i) for s in STREAMS for i in range(50)}
    assert len(seeds) == 50 * len(STREAMS)
    with pytest.raises(KeyError):
        keyed_seed(key, 0, "nope", 0)
