"""Where the judge's GPU memory goes, job by job: an in-process pool runs genuine and faulty jobs on a full-size relu
(512 MiB a buffer) and, after each, releases its memory the way the judge does and prints what torch and the driver
say it still holds, the live shared arenas (and which of them a runner still counts), the closed arenas' pools that
wait for their release, and the blocks torch keeps for consumers of its CUDA IPC shares.

    python benchmarks/probe_judge_memory.py [--jobs genuine,abort,genuine,spin,genuine]
    KERNEL_GYM_PRIVATE_ARENAS=0 python benchmarks/probe_judge_memory.py   # every arena from torch's shared pool
"""

from __future__ import annotations

import argparse
import gc
import json
import struct
import subprocess
import time
import weakref
from pathlib import Path
from typing import Any

import torch

from kernel_gym.eval.job import EvalConfig, job_for
from kernel_gym.judge.judge_memory import release_judge_memory
from kernel_gym.judge.pool import WorkerPool
from kernel_gym.sandbox import shared
from kernel_gym.tasks import load_task

SHARES: list[tuple[str, int, int, Any]] = []  # (ref-counter file, offset, MiB, weakref to the arena): every share


def _recording(descriptor):
    def wrapped(self):
        out = descriptor(self)
        if self._counter is not None:  # noqa: SLF001
            handle, offset = self._counter  # noqa: SLF001
            name = handle.decode() if isinstance(handle, bytes) else str(handle)
            SHARES.append((name, int(offset), round(sum(s.nbytes for s in self.specs) / 2**20), weakref.ref(self)))
        return out
    return wrapped


shared.Arena.descriptor = _recording(shared.Arena.descriptor)


def counters() -> dict[str, Any]:
    """torch's IPC count of every share so far (a runner that still maps the buffer keeps it above 0), read from
    the ref-counter files in /dev/shm: how many shares are still counted, their MiB, and whether the arena lives."""
    held = []
    for name, offset, mib, ref in SHARES:
        try:
            with open("/dev/shm/" + name.lstrip("/"), "rb") as f:
                f.seek(offset * 8)
                value = struct.unpack("<q", f.read(8))[0]
        except OSError:
            value = None
        if value:
            held.append({"mib": mib, "count": value, "arena_alive": ref() is not None})
    return {"shares": len(SHARES), "counted": len(held), "counted_mib": sum(h["mib"] for h in held),
            "counted_dead_arenas_mib": sum(h["mib"] for h in held if not h["arena_alive"])}


SOL = Path(__file__).resolve().parents[1] / "tests" / "solutions"
KINDS = {"genuine": SOL / "level1_relu.py", "abort": SOL / "faults" / "abort.py",
         "spin": SOL / "faults" / "spin_first_call.py", "illegal": SOL / "faults" / "illegal_access.py"}


def driver_mib() -> dict[str, float]:
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout
    return {pid.strip(): float(mib) for pid, mib in (line.split(",") for line in out.splitlines() if "," in line)}


def arenas() -> list[dict]:
    live = [o for o in gc.get_objects() if isinstance(o, shared.Arena)]
    return [{"mib": round(sum(s.nbytes for s in a.specs) / 2**20), "counted": a._counter is not None,  # noqa: SLF001
             "base": a.base is not None} for a in live]


def snapshot(label: str, pool: WorkerPool, t0: float) -> dict:
    import os

    slots = [(s.cand.pid, len(s.cand.shared), s.ref.pid, len(s.ref.shared)) for s in pool._all]  # noqa: SLF001
    live = arenas()
    row = {"after": label, "t_s": round(time.monotonic() - t0, 1),
           "allocated_mib": round(torch.cuda.memory_allocated() / 2**20),
           "reserved_mib": round(torch.cuda.memory_reserved() / 2**20),
           "driver_mib_this_process": driver_mib().get(str(os.getpid())),
           "arenas_live": len(live), "arenas_live_mib": sum(a["mib"] for a in live if a["base"]),
           "arenas_counted": sum(a["counted"] for a in live), "retired_pools_waiting": shared.retired_count(),
           "ipc_counts": counters(),
           "runner_shared_lists": slots}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", default="genuine,genuine,abort,genuine,spin,genuine,illegal,genuine")
    args = ap.parse_args()
    task = load_task("level1/relu")
    pool = WorkerPool("cuda")
    t0 = time.monotonic()
    try:
        pool.warm_up()
        snapshot("warm_up", pool, t0)
        for kind in args.jobs.split(","):
            job = job_for(task, KINDS[kind].read_text(), backend="triton",
                          config=EvalConfig(device="cuda", checks="none" if kind != "genuine" else "standard"))
            result = pool.evaluate(job)
            print(json.dumps({"job": kind, "outcome": result.outcome.value, "recycled": result.worker_recycled,
                              "message": result.message[:160]}), flush=True)
            time.sleep(1.0)  # (a killed runner is reaped in the background)
            snapshot(f"{kind} (no release)", pool, t0)
            release_judge_memory("cuda")
            snapshot(f"{kind} (released)", pool, t0)
        torch.cuda.ipc_collect()
        gc.collect()
        snapshot("end, ipc_collect + gc", pool, t0)
    finally:
        pool.close()
    time.sleep(2)
    release_judge_memory("cuda")
    snapshot("pool closed, released", pool, t0)


if __name__ == "__main__":
    main()
