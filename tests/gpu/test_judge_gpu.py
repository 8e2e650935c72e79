"""The judge on a GPU: CUDA IPC tensors, interprocess events around the judge's own timing events, a hang ended in
seconds, and the fixed cross-process cost measured (not assumed)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.eval.result import Outcome
from kernel_gym.tasks import load_task

pytestmark = pytest.mark.gpu
SOL = Path(__file__).resolve().parents[1] / "solutions"

HANG_LATER = (SOL / "faulty" / "relu_hangs_from_fifth_call.py").read_text()


EARLY_DONE = '''
import gc
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.done = None

    def forward(self, x):
        if self.done is None:  # the runner's "done" event: kept, and a dummy left in its place
            for o in gc.get_objects():
                events = getattr(o, "events", None) if type(o).__name__ == "Session" else None
                if isinstance(events, dict) and "done" in events:
                    self.done, events["done"] = events["done"], torch.cuda.Event()
                    break
        if self.done is not None:
            self.done.record()  # the judge's interval would end here, before any work
        y = torch.empty_like(x)
        for _ in range(20):  # 20x the work, hidden after the forged "done"
            _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
'''


EARLY_VALUE = '''
import ctypes
import sys
import torch
import torch.nn as nn
import triton
import triton.language as tl

_write = ctypes.CDLL("libcuda.so.1").cuStreamWriteValue64_v2
_write.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint]


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        frame = sys._getframe(1)  # the runner's call: this call's nonce and the judge's flag
        while frame is not None and not (frame.f_code.co_name == "call" and "nonce" in frame.f_locals):
            frame = frame.f_back
        if frame is not None and frame.f_locals["nonce"] is not None:
            session = frame.f_locals["self"]
            _write(torch.cuda.current_stream().cuda_stream, session.flag.tensors[0].data_ptr(),
                   frame.f_locals["nonce"], 0)  # the judge's interval would end here, before any work
        y = torch.empty_like(x)
        for _ in range(20):  # 20x the work, hidden after the forged end
            _relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
'''


@pytest.fixture(scope="module")
def cuda_pool():
    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cuda")
    pool.warm_up()
    yield pool
    pool.close()


def job(code: str, task: str = "level1/relu", **config):
    return job_for(load_task(task), code, backend="triton", config=EvalConfig(device="cuda", **config))


def test_genuine_timed_by_the_judge(cuda_pool):
    result = cuda_pool.evaluate(job((SOL / "level1_relu.py").read_text()))
    assert result.outcome is Outcome.CORRECT, result.message
    assert result.timing.method == "judge_cuda_events+gate" and result.timing.gate_ms > 0, result.timing
    assert 0.3 < result.speedup < 3.0, result.timing  # a ReLU against torch.relu: near 1


@pytest.mark.parametrize("attack", ["EARLY_DONE", "EARLY_VALUE"])
def test_early_done_reads_as_unwritten_outputs(cuda_pool, attack):
    """Timer class: the candidate ends the judge's interval before its work: it records the runner's "done" event
    early (and leaves a dummy for the runner's own record), or writes this call's nonce into the judge's flag early
    (found in the runner's frame). The outputs reach the judge's buffers only after the work, and the judge reads
    them right after its end, which follows that early end: the timed rounds are wrong, never fast. (Where the end
    waits for the nonce, the early "done" ends nothing: correct, and 20x slow.)"""
    result = cuda_pool.evaluate(job(globals()[attack], checks="none"))
    assert not result.correct or result.speedup < 0.3, (result.outcome, result.timing)
    if attack == "EARLY_VALUE":
        assert result.outcome in (Outcome.REJECTED, Outcome.MISMATCH), (result.outcome, result.message[:300])


def test_a_shared_buffer_is_alone_in_its_allocation():
    """CUDA IPC maps a runner the whole allocation a shared tensor lies in. Two small arenas (a job's inputs and the
    flag, both well under the caching allocator's 2 MB segments) and a judge tensor made between them: each arena's
    segment holds that arena alone, so no runner reaches another's buffers or the judge's."""
    import torch

    from kernel_gym.sandbox.shared import Arena, Spec

    a = Arena([Spec((64, 64), "float32")], torch.device("cuda"))
    secret = torch.randn(64, 64, device="cuda")
    b = Arena([Spec((1,), "int64")], torch.device("cuda"))
    segments = torch.cuda.memory_snapshot()
    for arena in (a, b):
        ptr = arena.base.data_ptr()
        seg = next(s for s in segments if s["address"] <= ptr < s["address"] + s["total_size"])
        live = [blk for blk in seg["blocks"] if blk["state"] == "active_allocated"]
        assert len(live) == 1 and not (seg["address"] <= secret.data_ptr() < seg["address"] + seg["total_size"]), seg


def test_gate_holds_the_streams_a_solution_made():
    """The runner tracks `torch.cuda.Stream()` from its start: the gate holds the legacy stream and the streams made
    since (not torch's 128 pooled streams), and a wrapped external stream is left to the profiler check."""
    import torch

    from kernel_gym.harness import timing

    timing.track_streams()
    before = len(timing.gated_streams(torch.device("cuda")))
    made = torch.cuda.Stream()
    external = torch.cuda.ExternalStream(torch.cuda.Stream(priority=-1).cuda_stream)
    gated = [s.cuda_stream for s in timing.gated_streams(torch.device("cuda"))]
    assert gated[0] == 0 and made.cuda_stream in gated and len(gated) <= before + 2, gated
    assert external.cuda_stream in gated  # the pooled stream it wraps was made above: tracked as that one
    assert len(gated) < 10, gated  # not the pools' 128
    torch.cuda.current_stream(), torch.cuda.default_stream()  # Stream objects for existing streams: not "made"
    with torch.cuda.stream(made):
        torch.cuda.current_stream()
    again = [s.cuda_stream for s in timing.gated_streams(torch.device("cuda"))]
    assert again == gated and len(set(again)) == len(again), (again, gated)  # each stream once: one marker each


def test_hanging_call_is_a_timeout_within_seconds(cuda_pool):
    """A kernel that never ends from the fifth call on: `timeout` at max(2 s, 50x the reference's call) plus the
    kill, not the run limit; the runner is replaced and the next job is judged normally."""
    t0 = time.monotonic()
    result = cuda_pool.evaluate(job(HANG_LATER))
    took = time.monotonic() - t0
    assert result.outcome is Outcome.TIMEOUT, (result.outcome, result.message)
    assert result.worker_recycled
    assert took < 60, took  # compile + checks + the 2 s limit, far below run_timeout_s (120 s)
    after = cuda_pool.evaluate(job((SOL / "level1_relu.py").read_text()))
    assert after.outcome is Outcome.CORRECT, after.message


@pytest.fixture()
def clocked_runner():
    """A started cuda runner in a job, and a gated judge clock bound to it, its gate learned (20 no-op calls)."""
    import torch

    from kernel_gym.judge.clock import CudaClock, fixed_cost
    from kernel_gym.judge.runners import RunnerProcess

    runner = RunnerProcess("cuda")
    try:
        runner.wait_ready()
        runner.request("begin", deadline=time.monotonic() + 60, stage="compile")
        clock = CudaClock(torch.device("cuda"), gate=True)
        clock.bind(runner, time.monotonic() + 60)
        fixed_cost(clock, runner, n=20)
        yield runner, clock
    finally:
        runner.stop()


def test_fixed_cross_process_cost_is_small(clocked_runner):
    from kernel_gym.judge.clock import fixed_cost

    runner, clock = clocked_runner
    cost = fixed_cost(clock, runner, n=100)
    print("no-op call on the judge's clock:", cost)
    assert 0 <= cost["median_ms"] < 0.5, cost


def test_a_host_stall_is_never_part_of_a_reading(clocked_runner):
    """A host stall longer than the launch gate while a call is queued (a loaded machine, the judge's other threads,
    a slow runner) would be read as GPU time, on either side or in the calibration that is subtracted from both. The
    judge keeps a reading only if the GPU was still in the gate when the reply came; a stalled call is taken again."""
    import itertools

    from kernel_gym.judge.clock import fixed_cost, noop_readings

    runner, clock = clocked_runner
    calm = fixed_cost(clock, runner, n=40)["median_ms"]
    real, count = runner.request, itertools.count()

    def stalled(op, **fields):
        if op == "noop" and next(count) % 3 == 0:
            time.sleep(0.02)  # 20 ms: longer than the longest gate (5 ms)
        return real(op, **fields)

    runner.request = stalled
    clock.misses = 0
    readings = noop_readings(clock, runner, 30, time.monotonic() + 60)
    print("calm median", calm, "stalled run", sorted(readings)[-3:], "retakes", clock.misses)
    assert clock.misses >= 5, clock.misses
    assert max(readings) < calm + 1.0, (calm, readings)


def test_runners_give_their_gpu_memory_back_between_jobs():
    """A runner between jobs holds its CUDA context only: what the job's tensors took (a full-size level1/relu: 512 MB
    a tensor, on both sides) goes back to the driver for the other runners on the GPU. With 8 clients, runners that
    kept their caches filled an H100 and genuine kernels ended as `crash` for want of memory."""
    import torch

    from kernel_gym.judge.pool import WorkerPool

    def runners_use() -> int:  # everything on the GPU but this process's (the judge's) own reservations
        free, total = torch.cuda.mem_get_info()
        return total - free - torch.cuda.memory_reserved()

    pool = WorkerPool("cuda")  # fresh runners: nothing cached yet
    try:
        pool.warm_up()
        before = runners_use()
        result = pool.evaluate(job((SOL / "level1_relu.py").read_text()))
        assert result.outcome is Outcome.CORRECT, result.message
        grown = runners_use() - before
    finally:
        pool.close()
    print(f"runners' GPU memory after a full-size relu job: {grown / 2**20:+.0f} MiB")
    assert grown < 256 * 2**20, grown


@pytest.mark.timeout(600)
def test_an_idle_judge_gives_its_gpu_memory_back(tmp_path, monkeypatch):
    """The machine's judge holds its jobs' buffers (a full-size relu: inputs and outputs of 512 MB, for both sides)
    in torch's cache; with 8 jobs at once an H100's judge reached 58 GiB. Once idle for IDLE_RELEASE_S it gives
    them back, while its clients stay connected (an env waiting for the LLM's next action)."""
    from kernel_gym.judge.client import JudgeClient, socket_path, stop_judge

    monkeypatch.setenv("KERNEL_GYM_JUDGE_DIR", str(tmp_path / "judges"))
    monkeypatch.setenv("KERNEL_GYM_JUDGE_IDLE_RELEASE_S", "2")
    client = JudgeClient.for_device("cuda", gpu=0, slots=2)
    try:
        result = client.evaluate(job((SOL / "level1_relu.py").read_text()))
        assert result.outcome is Outcome.CORRECT, result.message
        held = client.status()["gpu_reserved_mb"]
        deadline = time.monotonic() + 30
        while client.status()["idle_releases"] == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        status = client.status()
    finally:
        client.close()
        stop_judge(socket_path("cuda", 0))
    print(f"judge's GPU memory after a full-size relu job: {held:.0f} MiB; idle: {status['gpu_reserved_mb']:.0f} MiB")
    assert held > 1024 and status["idle_releases"] == 1 and status["gpu_reserved_mb"] < 64, (held, status)


@pytest.mark.timeout(600)
def test_a_killed_runners_buffers_go_back():
    """A runner that is killed lets go of nothing: torch's IPC count of every buffer the judge shared with it stays
    up, and torch kept that memory for as long as the judge ran (every faulty job's inputs and outputs; an H100's
    judge reached 77 GiB after a 5 % fault run). The judge releases a dead runner's count itself, and a live one's after its job
    (a runner under a uid of its own cannot open torch's counter file): after clean and faulty jobs on full-size relu
    (512 MiB a buffer), the judge's memory, once released, is back where one clean job leaves it."""
    import torch

    from kernel_gym.judge.pool import WorkerPool

    pool = WorkerPool("cuda")
    try:
        pool.warm_up()
        genuine = job((SOL / "level1_relu.py").read_text())
        assert pool.evaluate(genuine).outcome is Outcome.CORRECT
        pool.release_memory()
        clean = torch.cuda.memory_reserved() / 2**20
        for _ in range(2):  # clean jobs: their runner ended them (under a uid of its own it cannot release its count)
            assert pool.evaluate(genuine).outcome is Outcome.CORRECT
        pool.release_memory()
        after_clean = torch.cuda.memory_reserved() / 2**20
        for _ in range(3):
            faulty = pool.evaluate(job((SOL / "faults" / "abort.py").read_text(), checks="none"))
            assert faulty.outcome is Outcome.CRASH and faulty.worker_recycled, (faulty.outcome, faulty.message[:300])
        pool.release_memory()
        after = torch.cuda.memory_reserved() / 2**20
    finally:
        pool.close()
    print(f"judge's GPU memory after a clean job: {clean:.0f} MiB; after 2 more: {after_clean:.0f} MiB; "
          f"after 3 killed runners: {after:.0f} MiB")
    assert after_clean < clean + 64 and after < clean + 64, (clean, after_clean, after)
