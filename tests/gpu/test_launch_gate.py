"""The launch gate of the cuda timer (kernel_gym.harness.timing.CudaTimer): host time spent before the call's GPU work
is left out of the reading, GPU work on torch's pooled side streams is still counted in full, and a reading of
GPU work alone matches the work's own length. Run with `pytest -m gpu tests/gpu` on an NVIDIA GPU."""

from __future__ import annotations

import statistics
import time

import pytest
import torch

from kernel_gym.harness.timing import CudaTimer

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cycles_per_ms() -> float:
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(2):
        a.record()
        torch.cuda._sleep(2_000_000)
        b.record()
        b.synchronize()
    return 2_000_000 / a.elapsed_time(b)


def readings(timer: CudaTimer, fn, n: int = 15) -> float:
    for _ in range(3):  # the gate learns its length
        timer.time(fn)
    return statistics.median(timer.time(fn)[0].ms for _ in range(n))


def host_wait(ms: float) -> None:
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        pass


def test_gate_leaves_out_host_latency_and_counts_side_streams(cycles_per_ms):
    dev = torch.device("cuda")
    work = int(0.2 * cycles_per_ms)  # 0.2 ms of GPU work

    def slow_launch():  # 0.3 ms of host time before the GPU work is queued
        host_wait(0.3)
        torch.cuda._sleep(work)

    side = torch.cuda.Stream()

    def on_side_stream():
        with torch.cuda.stream(side):
            torch.cuda._sleep(work)

    inline, gated = CudaTimer(dev, 8, gate=False), CudaTimer(dev, 8, gate=True)
    assert gated.gated and gated.method == "cuda_events+gate+device_sync" and inline.method == "cuda_events+device_sync"
    slow_inline, slow_gated = readings(inline, slow_launch), readings(gated, slow_launch)
    assert slow_inline > 0.45, slow_inline  # host latency + work
    assert 0.17 < slow_gated < 0.3, (slow_gated, gated.gate_ms)  # the work alone
    assert gated.gate_ms > 0.3  # grew to cover the host's lead
    side_gated = readings(gated, on_side_stream)
    assert side_gated > 0.17, side_gated  # held back by the gate, then counted
