"""Can the end of a timed call wait on a value the judge can write itself, instead of on a runner's event?

`probe_stuck_wait.py` showed that a judge stream waiting (cudaStreamWaitEvent) on a runner's interprocess event that
never completes poisons the judge's whole context. Here the judge's end waits with cuStreamWaitValue64 on an 8-byte
flag in judge-owned memory (shared with the runner through CUDA IPC); the runner writes a nonce there on its stream
after its work (cuStreamWriteValue64). Plain torch + cuda.bindings, no kernel-gym code.

    python benchmarks/probe_wait_value.py release   # runner's work never ends: kill it, the judge writes the nonce
    python benchmarks/probe_wait_value.py bias      # normal calls: the reading by value vs by event (µs)

release: whether the judge's end completes after the judge writes the flag, and whether its context still works.
bias: for kernels of known length, the judge's start->end reading ending on the value and ending on the event.
"""

from __future__ import annotations

import itertools
import os
import signal
import statistics
import sys
import threading
import time

import torch
import torch.multiprocessing as mp
from cuda.bindings import driver
from torch.multiprocessing.reductions import reduce_tensor

EQ = driver.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_EQ
WRITE = driver.CUstreamWriteValue_flags.CU_STREAM_WRITE_VALUE_DEFAULT
NONCES = itertools.count((1 << 40) + 1)  # every call a value the flag has never held


def _check(result) -> None:
    err = result[0] if isinstance(result, tuple) else result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver error {err}")


def write_value(stream: torch.cuda.Stream, flag: torch.Tensor, value: int) -> None:
    _check(driver.cuStreamWriteValue64(driver.CUstream(stream.cuda_stream), driver.CUdeviceptr(flag.data_ptr()),
                                       driver.cuuint64_t(value), WRITE))


def wait_value(stream: torch.cuda.Stream, flag: torch.Tensor, value: int) -> None:
    _check(driver.cuStreamWaitValue64(driver.CUstream(stream.cuda_stream), driver.CUdeviceptr(flag.data_ptr()),
                                      driver.cuuint64_t(value), EQ))


def runner(conn, flag_payload, done_handle, go_handle) -> None:
    torch.cuda.init()
    fn, args = flag_payload
    flag = fn(*args)
    done = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), done_handle)
    go = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), go_handle)
    stream = torch.cuda.Stream()
    cycles_per_ms = conn.recv()
    while True:
        msg = conn.recv()
        if msg is None:
            return
        ms, nonce = msg
        with torch.cuda.stream(stream):
            stream.wait_event(go)  # the judge's gate: the work starts after the judge's start event
            torch.cuda._sleep(int(ms * cycles_per_ms))
            done.record(stream)
        conn.send("queued")
        nonce = conn.recv()  # only after the work is queued: nothing the call ran could have known it
        write_value(stream, flag, nonce)
        conn.send("marked")


def cycles_per_ms() -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    return 10_000_000 / start.elapsed_time(end)


def usable(limit_s: float = 10.0) -> str:
    box: dict[str, str] = {}

    def go() -> None:
        x = torch.ones(1 << 20, device="cuda")
        torch.cuda.synchronize()
        box["r"] = f"ok ({float(x.sum()):.0f})"

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(limit_s)
    return box.get("r", f"hung > {limit_s:.0f} s")


def start_runner():
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    flag = torch.zeros(1, dtype=torch.int64, device="cuda")
    done, go = torch.cuda.Event(interprocess=True), torch.cuda.Event(interprocess=True)
    go.record()
    proc = ctx.Process(target=runner, args=(child, reduce_tensor(flag), done.ipc_handle(), go.ipc_handle()), daemon=True)
    proc.start()
    rate = cycles_per_ms()
    parent.send(rate)
    return proc, parent, flag, done, go, rate


def timed(parent, flag, done, go, rate: float, ms: float, by: str, ends: torch.cuda.Stream) -> float | None:
    """One call as the judge's clock makes it: a 2 ms gate on the judge's stream, its start, "go" (which the
    runner's work waits for), then the end on a stream of its own after the runner's "done" or value."""
    nonce = next(NONCES)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(int(2.0 * rate))
    start.record()
    go.record()
    parent.send((ms, nonce))
    parent.recv()
    parent.send(nonce)
    parent.recv()
    if by == "value":
        wait_value(ends, flag, nonce)
    else:
        ends.wait_event(done)
    end.record(ends)
    t0 = time.monotonic()
    while not end.query():
        if time.monotonic() - t0 > 5:
            return None
        time.sleep(1e-5)
    return start.elapsed_time(end)


def main(variant: str) -> None:
    torch.cuda.init()
    proc, parent, flag, done, go, rate = start_runner()
    ends, release = torch.cuda.Stream(), torch.cuda.Stream()
    if variant == "release":
        nonce = int.from_bytes(os.urandom(8), "little") >> 1
        parent.send((120_000.0, nonce))  # 120 s of work
        parent.recv()
        parent.send(nonce)
        parent.recv()
        other = nonce ^ 0x5A5A  # what the judge waits for: not what the runner wrote (its work never ends anyway)
        end = torch.cuda.Event()
        wait_value(ends, flag, other)
        end.record(ends)
        time.sleep(1.0)
        print("release: end done after 1 s:", end.query())
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        with torch.cuda.stream(release):
            write_value(release, flag, other)
        t0 = time.monotonic()
        while not end.query() and time.monotonic() - t0 < 10:
            time.sleep(0.001)
        print(f"  runner killed, the judge wrote the value: end done {end.query()} after {time.monotonic() - t0:.3f} s")
        print("  judge context (device-wide synchronize):", usable())
    else:
        for ms in (0.005, 0.02, 0.1, 1.0):
            row = {}
            for by in ("event", "value"):
                readings = [timed(parent, flag, done, go, rate, ms, by, ends) for _ in range(30)]
                readings = [r for r in readings if r is not None]
                row[by] = statistics.median(readings) * 1e3 if readings else float("nan")
            print(f"bias: work {ms * 1e3:7.1f} us: by event {row['event']:8.2f} us, by value {row['value']:8.2f} us, "
                  f"difference {row['value'] - row['event']:+.2f} us")
        parent.send(None)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "release")
