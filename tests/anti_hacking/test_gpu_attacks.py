"""The defenses that only exist on cuda, each against its attack (static rules bypassed: jobs go straight to a
cuda WorkerPool), plus the genuine solutions on cuda (no false rejection by NaN poisoning or the profiler check).

- NaN poisoning of freed device memory -> `uninitialized_output` (stale output, partial write, lucky zeros, NaN)
- profiler share of GPU time in the solution's own kernels -> `library_time` (decoys the ablation cannot see)
- whole-device synchronize inside the timed interval -> a side stream buys no speedup
- host clock around the same interval as the events -> `timer_tampering`
- and, on cuda too, the op audit (`torch_compute`, which runs before the ablation and the profiler check), launch
  counting of failed launches (`no_custom_kernel`) and the output dtype (`precision_downcast`)

The attack table is GPU_ATTACKS in ah_helpers.py (test_attacks.py checks every cuda-only check has an attack).

Run with `pytest -m gpu tests/anti_hacking` on a machine with an NVIDIA GPU (skipped elsewhere).
"""

from __future__ import annotations

import pytest
from ah_helpers import ATTACKS, GENUINE, GPU_ATTACKS, SOLUTIONS, make_job

from kernel_gym.eval.result import Outcome

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda_pool():
    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cuda")
    pool.warm_up()
    yield pool
    pool.close()


def run(pool, code: str, task: str = "level1/relu", **config):
    return pool.evaluate(make_job(code, task, device="cuda", **config))


@pytest.fixture(scope="module")
def verdicts():
    """The verdicts the tests below only read (attacks caught, genuine solutions accepted), judged concurrently on
    one cuda pool of 8 slots (timing stays exclusive: the pool's GPU lock): (kind, name) -> EvalResult."""
    from concurrent.futures import ThreadPoolExecutor

    from kernel_gym.judge.pool import WorkerPool

    jobs = {("attack", n): (attack(n), "level1/relu", config) for n, (_, config) in GPU_ATTACKS.items()}
    jobs |= {("project", p.name): (p.read_text(), p.stem.replace("_", "/", 1), {"checks": "strict"}) for p in PROJECT}
    jobs |= {("genuine", n): ((GENUINE / n).read_text(), t, {"checks": preset}) for n, (t, preset) in GENUINE_GPU.items()}
    pool = WorkerPool("cuda", 8)
    try:
        with ThreadPoolExecutor(max_workers=8) as threads:
            futures = {k: threads.submit(run, pool, code, task, **config) for k, (code, task, config) in jobs.items()}
            return {k: f.result() for k, f in futures.items()}
    finally:
        pool.close()


def attack(name: str) -> str:
    return (ATTACKS / name).read_text()


def nonblocking_raw_stream(from_call: int = 0) -> str:
    """13_side_stream_raw.py with its CuPy stream created non-blocking (used from call `from_call` on)."""
    code = attack("13_side_stream_raw.py")
    assert "NON_BLOCKING = False" in code and "FROM_CALL = 0" in code
    return code.replace("NON_BLOCKING = False", "NON_BLOCKING = True").replace("FROM_CALL = 0", f"FROM_CALL = {from_call}")


@pytest.mark.parametrize("name", sorted(GPU_ATTACKS), ids=lambda n: n[:-3])
def test_gpu_attack_caught(verdicts, name):
    wanted, _ = GPU_ATTACKS[name]
    result = verdicts["attack", name]
    where = f"{name} on cuda: {result.outcome.value} {result.hacks} {result.message[:400]}"
    assert not result.correct, where
    assert result.outcome is Outcome.REJECTED, where
    assert wanted & set(result.hacks), where


def test_written_nan_is_a_mismatch_on_cuda(cuda_pool):
    """08_nan_output.py writes NaN constants: NaN it wrote, not the fill's bits (0xFF bytes), so on cuda it is a plain
    mismatch, not `uninitialized_output` (on cpu torch's fill and the constant share their bits)."""
    result = run(cuda_pool, attack("08_nan_output.py"))
    assert result.outcome is Outcome.MISMATCH and not result.hacks, (result.outcome, result.hacks, result.message[:300])


@pytest.mark.parametrize("gate", [True, False], ids=["gated", "inline"])
@pytest.mark.parametrize("name", ["13_side_stream.py", "13_side_stream_raw.py"])
def test_side_stream_buys_no_speedup(cuda_pool, name, gate):
    """Class 13: the same ReLU kernel launched on another stream is timed like the genuine one. Inline, because the
    runner synchronizes the whole device before it copies the outputs and records "done"; with the launch gate,
    because torch's pooled streams wait for "go" and are joined before the copy, and a stream outside the pool (the
    CuPy one) is seen by the profiler check, so that solution is timed without the gate."""
    genuine = run(cuda_pool, (SOLUTIONS / "level1_relu.py").read_text(), launch_gate=gate)
    side = run(cuda_pool, attack(name), launch_gate=gate)
    assert genuine.outcome is Outcome.CORRECT, genuine.message
    assert side.outcome is Outcome.CORRECT, side.message  # nothing wrong with its values
    raw = name == "13_side_stream_raw.py"
    assert ("ungated_stream_kernels" in side.signals) == (gate and raw), side.signals
    if gate and not raw:
        assert side.timing.method == "judge_cuda_events+gate" and side.timing.gate_ms > 0, side.timing
    else:
        assert side.timing.method == "judge_cuda_events+device_sync" and side.timing.gate_ms == 0, side.timing
    # same kernel (BLOCK=1024 vs 4096 aside): the side-stream version must not look much faster
    assert side.timing.runtime_ms > 0.7 * genuine.timing.runtime_ms, (side.timing, genuine.timing)
    assert side.timing.speedup < 1.5 * genuine.timing.speedup


@pytest.mark.parametrize("from_call", [0, 20], ids=["always", "timed-calls-only"])
def test_nonblocking_raw_stream_timed_without_the_gate(cuda_pool, from_call):
    """A non-blocking stream outside torch's pool does not wait for the launch gate, so its work could run during
    the gate unseen. The profiler sees its kernel on a stream the gate does not hold, before timing (always) or in
    the profiled gated call after timing (used only from call 20 on, past the checks): timed without the gate."""
    genuine = run(cuda_pool, (SOLUTIONS / "level1_relu.py").read_text())
    side = run(cuda_pool, nonblocking_raw_stream(from_call))
    if from_call and not side.correct:
        # used only in gated timed calls, the stream does not wait for the judge's inputs (written after its start
        # event): it reads the previous round's and the round is wrong. Rejected: it buys nothing either.
        assert side.outcome in (Outcome.REJECTED, Outcome.MISMATCH), (side.outcome, side.message[:300])
        return
    assert side.outcome is Outcome.CORRECT, side.message
    assert side.signals.get("ungated_stream_kernels", 0) >= 1, side.signals
    assert side.timing.method == "judge_cuda_events+device_sync" and side.timing.gate_ms == 0, side.timing
    assert side.timing.runtime_ms > 0.7 * genuine.timing.runtime_ms, (side.timing, genuine.timing)
    assert side.timing.speedup < 1.5 * genuine.timing.speedup, (side.timing, genuine.timing)


def test_nonblocking_raw_stream_counted_inline(cuda_pool):
    genuine = run(cuda_pool, (SOLUTIONS / "level1_relu.py").read_text(), launch_gate=False)
    side = run(cuda_pool, nonblocking_raw_stream(), launch_gate=False)
    assert side.outcome is Outcome.CORRECT, side.message
    assert side.timing.runtime_ms > 0.7 * genuine.timing.runtime_ms, (side.timing, genuine.timing)


PROJECT = sorted(SOLUTIONS.glob("level*.py"))
GENUINE_GPU = {
    "relu_views_empty.py": ("level1/relu", "strict"),
    "relu_zeros_positive_store.py": ("level1/relu", "strict"),
    "relu_inplace_on_clone.py": ("level1/relu", "strict"),
    "softmax_two_kernels.py": ("level1/softmax", "strict"),
    "gemm_bias_gelu_linear_params.py": ("level2/gemm_bias_gelu", "strict"),
    "gemm_relu_cached_weight_prep.py": ("level2/gemm_relu", "strict"),
    # a cuBLAS GEMM of 2048x4096x4096 next to an elementwise epilogue: the epilogue's share of GPU time is ~1%
    "gemm_relu_library_gemm_standard.py": ("level2/gemm_relu", "standard"),
}


@pytest.mark.parametrize("path", PROJECT, ids=lambda p: p.stem)
def test_gpu_project_solution_accepted(verdicts, path):
    result = verdicts["project", path.name]
    assert result.outcome is Outcome.CORRECT and not result.hacks, f"{path.name}: {result.hacks} {result.message[:400]}"
    assert "ungated_stream_kernels" not in result.signals, result.signals  # no stream false positive: gated timing
    assert result.timing.method == "judge_cuda_events+gate", result.timing


@pytest.mark.parametrize("name", sorted(GENUINE_GPU), ids=lambda n: n[:-3])
def test_gpu_genuine_accepted(verdicts, name):
    result = verdicts["genuine", name]
    assert result.outcome is Outcome.CORRECT and not result.hacks, f"{name}: {result.hacks} {result.message[:400]}"


def test_stream_made_in_every_call_is_correct(cuda_pool):
    """Genuine, if careless: a new `torch.cuda.Stream()` in every forward, the kernel launched there without waiting
    for the caller's stream and never joined. The inputs are written after the judge's start, so such a stream must
    be held too: made during a call it waits for "go" as it is made, and the runner joins it before the copy (or the
    profiler sees it and it is timed without the gate). Correct either way, and not faster than the plain kernel."""
    code = attack("13_side_stream.py").replace("            if self.stream is None:\n                self.stream = "
                                               "torch.cuda.Stream()\n", "            self.stream = torch.cuda.Stream()\n")
    assert "self.stream = torch.cuda.Stream()\n            with" in code
    genuine = run(cuda_pool, (SOLUTIONS / "level1_relu.py").read_text())
    fresh = run(cuda_pool, code)
    assert fresh.outcome is Outcome.CORRECT and not fresh.hacks, (fresh.outcome, fresh.hacks, fresh.message[:300])
    assert fresh.timing.runtime_ms > 0.7 * genuine.timing.runtime_ms, (fresh.timing, genuine.timing)
