"""Probe for the launch-ahead timer (kernel_gym.harness.timing): does a GPU-side gate on the timing stream hold back
work that the timed call puts on *another* stream, and how much does the gate steady short-kernel readings?

1. barrier: a `torch.cuda._sleep` gate on the current stream, the start event, then a kernel on a private
   non-blocking stream. If that kernel finishes before the gate does, side-stream work escapes a launch-ahead
   timer. Printed: how long after the gate's start the side kernel ended, against the gate's length.
   Run once plain and once with CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware queue: work issued after the start
   event cannot start before it).
2. steadiness: a Triton softmax and torch.softmax on 4096x8192 fp32 (~0.2 ms), timed as the evaluator does
   (flush, start, call, whole-device sync, end), inline and with the gate, in blocks of 30 rounds: each block's
   median speedup, and the CV over blocks.

    python3 benchmarks/launch_ahead_probe.py
    CUDA_DEVICE_MAX_CONNECTIONS=1 python3 benchmarks/launch_ahead_probe.py
"""

from __future__ import annotations

import os
import statistics
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, 0)
    e = tl.exp(x)
    tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, 0), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    _softmax[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


def cycles_per_ms() -> float:
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    torch.cuda._sleep(10_000_000)
    b.record()
    b.synchronize()
    return 10_000_000 / a.elapsed_time(b)


def barrier(cpm: float) -> None:
    """Held back: the side-stream work ended at least its own duration after the start event."""
    import threading

    side = torch.cuda.Stream()
    x = torch.randn(4096, 8192, device="cuda")
    y = torch.empty_like(x)
    softmax(x)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    softmax(x)
    b.record()
    b.synchronize()
    own = a.elapsed_time(b)

    def kernel_on_side():
        with torch.cuda.stream(side):
            softmax(x)

    def copy_on_side():
        with torch.cuda.stream(side):
            y.copy_(x, non_blocking=True)

    def kernel_from_thread():
        t = threading.Thread(target=kernel_on_side)
        t.start()
        t.join()

    for what, fn in (("kernel", kernel_on_side), ("d2d copy", copy_on_side), ("thread", kernel_from_thread)):
        for gate_ms in (0.2, 1.0):
            gates, after = [], []
            for _ in range(5):
                torch.cuda.synchronize()
                g0, start, s_end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
                g0.record()
                torch.cuda._sleep(int(gate_ms * cpm))
                start.record()
                fn()
                s_end.record(side)
                torch.cuda.synchronize()
                gates.append(g0.elapsed_time(start))
                after.append(start.elapsed_time(s_end))
            held = min(after) >= 0.5 * own if what != "d2d copy" else min(after) > 0
            print(f"barrier {what}: gate {statistics.median(gates):.3f} ms; side work ended "
                  f"{min(after):.3f}..{max(after):.3f} ms after the start event (kernel alone {own:.3f} ms) -> "
                  f"{'HELD BACK' if held else 'ESCAPED'}")


def steadiness(cpm: float, blocks: int = 10, rounds: int = 30) -> None:
    x = torch.randn(4096, 8192, device="cuda")
    flush = torch.empty(256 << 18, dtype=torch.int32, device="cuda")

    def timed(fn, gate_ms: float) -> float:
        flush.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if gate_ms:
            torch.cuda._sleep(int(gate_ms * cpm))
        start.record()
        fn(x)
        torch.cuda.synchronize()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    for _ in range(20):
        softmax(x), torch.softmax(x, -1)
    for gate_ms in (0.0, 0.3, 0.0, 0.3, 0.0, 0.3):
        speedups, cand, ref = [], [], []
        for _ in range(blocks):
            rt = [timed(softmax, gate_ms) for _ in range(rounds)]
            bt = [timed(lambda t: torch.softmax(t, -1), gate_ms) for _ in range(rounds)]
            cand.append(statistics.median(rt))
            ref.append(statistics.median(bt))
            speedups.append(ref[-1] / cand[-1])
            time.sleep(0.2)
        cv = statistics.stdev(speedups) / statistics.fmean(speedups)
        print(f"steadiness: gate {gate_ms} ms: triton {statistics.median(cand):.4f} ms, torch "
              f"{statistics.median(ref):.4f} ms, speedup per block {[round(s, 3) for s in speedups]}, CV {100 * cv:.2f} %")


if __name__ == "__main__":
    print("CUDA_DEVICE_MAX_CONNECTIONS =", os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "(unset)"))
    cpm = cycles_per_ms()
    barrier(cpm)
    steadiness(cpm)
