"""Timing rounds: a fixed count, or adaptive (at least the minimum, then until both medians are known to
`timing_rel_se`, up to `timing_max_trials` or `timing_budget_s`); Python's GC is off during the timed rounds.
Through real workers on the CPU backend (Triton interpreter); the stop rule is the same code on cuda."""

from __future__ import annotations

import json

import pytest

from kernel_gym.eval.job import EvalConfig
from kernel_gym.eval.result import Outcome
from kernel_gym.harness.timing import median_rel_se


def test_median_rel_se_is_robust_and_shrinks_with_n():
    assert median_rel_se([1.0, 1.0]) == float("inf")  # too few samples to say
    base = [1.0, 1.02, 0.98, 1.01, 0.99] * 4
    se = median_rel_se(base)
    assert 0 < se < 0.01
    assert median_rel_se(base * 4) == pytest.approx(se / 2, rel=1e-9)  # 1/sqrt(n)
    # a few large launch hiccups barely move it (MAD, not stdev)
    assert median_rel_se(base[:-2] + [5.0, 9.0]) < 2 * se


def test_round_counts_fixed_by_default_on_cpu_adaptive_on_cuda():
    assert EvalConfig(device="cpu").max_timing == EvalConfig(device="cpu").n_timing == 3
    cuda = EvalConfig(device="cuda")
    assert (cuda.n_timing, cuda.max_timing) == (10, 300)
    assert EvalConfig(device="cuda", timing_trials=10).max_timing == 10  # an explicit count stays fixed
    assert EvalConfig(device="cuda", timing_trials=10, timing_max_trials=50).max_timing == 50
    assert EvalConfig(device="cuda", timing_trials=10, timing_max_trials=5).max_timing == 10  # never below the min


@pytest.mark.timeout(240)
@pytest.mark.parametrize("rel_se, budget_s, expect", [
    (-1.0, 60.0, 14),  # never settled: runs to the maximum
    (1.0, 60.0, 4),  # settled at once: stops at the minimum
    (-1.0, 0.0, 4),  # budget spent: stops at the minimum
])
def test_adaptive_rounds_stop_on_precision_maximum_or_budget(pool, cpu_job, solution, rel_se, budget_s, expect):
    r = pool.evaluate(cpu_job(solution("level1/relu"), timing_trials=4, timing_max_trials=14,
                               timing_rel_se=rel_se, timing_budget_s=budget_s))
    assert r.outcome is Outcome.CORRECT, r.message
    assert r.timing.trials == expect
    assert r.timing.speedup_rel_se > 0


@pytest.mark.timeout(120)
def test_gc_is_off_during_timed_calls_only(pool, cpu_job, relu_code, runner_scratch):
    log = runner_scratch / "gc.jsonl"
    code = relu_code(header="import gc, json", extra=f"""
        with open({str(log)!r}, "a") as f:
            f.write(json.dumps(gc.isenabled()) + "\\n")
    """)
    r = pool.evaluate(cpu_job(code, timing_trials=3, correctness_trials=2, warmup=1))
    assert r.outcome is Outcome.CORRECT, r.message
    states = [json.loads(line) for line in log.read_text().splitlines()]
    # first call and correctness trials run with GC on; every call through the judge's clock with it off: the
    # warm-up call, the 3 timed calls and the audited call after timing (like a timed round)
    assert states[-5:] == [False] * 5
    assert states[0] is True and all(states[:-5])
