"""What releases a judge's stream that waits on a runner's interprocess "done" event queued behind a kernel that
never ends (the case `judge/clock.py`'s `_stuck` handles)? One variant per process; plain torch, no kernel-gym code.

    python benchmarks/probe_stuck_wait.py kill       # the runner is SIGKILLed
    python benchmarks/probe_stuck_wait.py rerecord   # the judge records "done" again on a stream of its own, then kills
    python benchmarks/probe_stuck_wait.py both       # kill, then record "done" itself
    python benchmarks/probe_stuck_wait.py abandon    # kill, leave the stuck stream: does the rest of the judge's context
                                                     # (its own streams, stream syncs, allocations, IPC, exit) still work?

Prints, per step, whether the judge's end event completed and how long it took, and whether the judge's context
still runs a kernel afterwards.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import torch
import torch.multiprocessing as mp


def runner(conn, seconds: float) -> None:
    torch.cuda.init()
    stream = torch.cuda.Stream()
    done = torch.cuda.Event(interprocess=True)
    cycles_per_ms = 1.7e6  # ~H100 clock; only the order of magnitude matters
    with torch.cuda.stream(stream):
        torch.cuda._sleep(int(seconds * 1e3 * cycles_per_ms))
        done.record(stream)
    conn.send(done.ipc_handle())
    time.sleep(3600)


def poll(event: torch.cuda.Event, limit_s: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if event.query():
            return time.monotonic() - t0
        time.sleep(0.01)
    return None


def usable(limit_s: float = 10.0, device_wide: bool = True) -> str:
    box: dict[str, str] = {}

    def go() -> None:
        try:
            x = torch.ones(1 << 20, device="cuda")
            if device_wide:
                torch.cuda.synchronize()
            else:  # only what the judge's own streams hold: the default one, a fresh one, an event, an allocation
                torch.cuda.current_stream().synchronize()
                side = torch.cuda.Stream()
                with torch.cuda.stream(side):
                    y = torch.empty(1 << 24, device="cuda").fill_(2.0)
                    ev = torch.cuda.Event(interprocess=True)
                    ev.record()
                ev.synchronize()
                side.synchronize()
                handle = y.untyped_storage()._share_cuda_()  # an IPC handle, as the judge's arenas make
                del y
                torch.cuda.empty_cache()
                x = x + float(len(handle))
            box["r"] = f"ok ({float(x.sum()):.0f})"
        except Exception as e:  # noqa: BLE001
            box["r"] = f"error {type(e).__name__}: {e}"[:200]

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(limit_s)
    return box.get("r", f"hung > {limit_s:.0f} s")


def main(variant: str) -> None:
    torch.cuda.init()
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=runner, args=(child, 120.0), daemon=True)
    proc.start()
    handle = parent.recv()
    done = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), handle)
    ends, release = torch.cuda.Stream(), torch.cuda.Stream()
    end = torch.cuda.Event()
    ends.wait_event(done)
    end.record(ends)
    print(variant, "queued; end done after 1 s:", poll(end, 1.0))
    if variant in ("rerecord",):
        with torch.cuda.stream(release):
            done.record()
        print("  re-recorded done (runner alive): end released after", poll(end, 5.0))
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    print("  runner killed: end released after", poll(end, 10.0))
    if variant == "both":
        with torch.cuda.stream(release):
            done.record()
        print("  re-recorded done (runner dead): end released after", poll(end, 5.0))
    if variant == "abandon":
        print("  judge's own streams, stream syncs, allocation, IPC:", usable(device_wide=False))
        print("  again, 5 s later:", (time.sleep(5), usable(device_wide=False))[1])
    print("  judge context (device-wide synchronize):", usable())
    sys.stdout.flush()
    print(f"  exiting at {time.time():.1f}")  # (the caller times the exit: a context with a stuck stream torn down)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "kill")
