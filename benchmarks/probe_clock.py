"""Where does a cross-process GPU clock lose time? Two processes and three plain workloads, no kernel-gym code in the
loop, so that what is measured is CUDA's own behavior on this GPU.

    python benchmarks/probe_clock.py --out DIR

The "judge" (this process) and a "worker" (a spawned child with its own CUDA context) share two interprocess
events, "go" and "done". For each workload (an empty sleep kernel of ~0.3 ms, a memory-bound relu, a compute-bound
fp32 matmul, and a three-kernel softmax) it reports, as medians over `--n` calls:

- `self`: the worker timing its own work with its own events, back to back, L2 flushed before each call (as
  `triton.testing.do_bench` does): the truth.
- `own`: the worker's own events around the same work when it is started by the judge's "go" (its context just
  switched in): work-side inflation (TLB or cache effects of a context switch) shows here.
- `judge`: the judge's events, gate -> start -> go ... wait(done) -> end, exactly as kernel_gym.judge.clock does.
- `judge-noop`: the same for a call with no work (one empty kernel): the fixed cost the judge subtracts.
- variants of `judge`: a longer gate (`gate3`), the judge's wait enqueued at once through a stream memory operation
  (`waitvalue`: the worker writes a word in the judge's IPC memory; the judge's stream waits on it), and a judge
  that polls "done" from the host before recording its end event (`hostpoll`, an upper bound).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

WORKLOADS = ("noop", "sleep", "relu", "matmul", "softmax")


def make_work(name: str, device: torch.device):
    g = torch.Generator(device=device).manual_seed(0)
    if name == "noop":
        return lambda: torch.cuda._sleep(0)
    if name == "sleep":
        cycles = int(0.3e-3 * torch.cuda.get_device_properties(device).clock_rate * 1e3)
        return lambda: torch.cuda._sleep(cycles)
    if name == "relu":
        x = torch.randn(1 << 26, device=device, generator=g)
        out = torch.empty_like(x)
        return lambda: torch.clamp(x, min=0, out=out)
    if name == "matmul":
        a = torch.randn(2048, 2048, device=device, generator=g)
        b = torch.randn(2048, 2048, device=device, generator=g)
        return lambda: a @ b
    if name == "softmax":
        x = torch.randn(4096, 8192, device=device, generator=g)
        return lambda: torch.softmax(x * 1.0001, dim=-1) + 0.0
    raise ValueError(name)


def worker(conn, handles: dict, flag_handle) -> None:
    device = torch.device("cuda", 0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.init()
    go = torch.cuda.Event.from_ipc_handle(device, handles["go"])
    done = torch.cuda.Event.from_ipc_handle(device, handles["done"])
    flag = None
    if flag_handle is not None:
        flag = flag_handle  # a tensor rebuilt by torch.multiprocessing from its CUDA IPC handle
    flush = torch.empty(256 << 18, dtype=torch.int32, device=device)
    works = {name: make_work(name, device) for name in WORKLOADS}
    stream = torch.cuda.current_stream(device)
    conn.send("ready")
    while True:
        msg = conn.recv()
        if msg is None:
            return
        op, name, n = msg
        work = works.get(name)
        if op == "hostcost":  # host microseconds per stream operation: waits on the IPC event vs a local event
            from kernel_gym.harness.timing import pooled_streams

            streams = [stream, *pooled_streams(device)]
            local = torch.cuda.Event()
            local.record()
            out = {"streams": len(streams)}
            for label, fn in (("wait_ipc", lambda s, e=go: s.wait_event(e)),
                              ("wait_local", lambda s, e=local: s.wait_event(e)),
                              ("record_local", lambda s, e=local: e.record(s))):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(n):
                    for s in streams:
                        fn(s)
                out[label + "_us"] = (time.perf_counter() - t0) * 1e6 / (n * len(streams))
            torch.cuda.synchronize()
            conn.send(out)
        elif op == "self":
            pairs = []
            for _ in range(n):
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                work()
                e.record()
                pairs.append((s, e))
            torch.cuda.synchronize()
            conn.send([s.elapsed_time(e) for s, e in pairs])
        elif op in ("call", "call_value"):
            seq = n
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            stream.wait_event(go)
            s.record()
            work()
            e.record()
            if op == "call":
                done.record(stream)
            else:  # the stream writes the call's number into the judge's word
                flag.fill_(seq)
            conn.send("launched")
            e.synchronize()
            conn.send(s.elapsed_time(e))


def judge_time(conn, go, done, flag, name: str, gate_ms: float, cycles_per_ms: float, mode: str, seq: int,
               flush: torch.Tensor):
    stream = torch.cuda.current_stream()
    flush.zero_()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if gate_ms:
        torch.cuda._sleep(int(gate_ms * cycles_per_ms))
    start.record()
    go.record()
    if mode == "waitvalue":
        wait_value(stream, flag, seq)
        end.record()
        conn.send(("call_value", name, seq))
        assert conn.recv() == "launched"
    else:
        conn.send(("call", name, seq))
        assert conn.recv() == "launched"
        if mode == "hostpoll":
            while not done.query():
                pass
        stream.wait_event(done)
        end.record()
    own = conn.recv()
    end.synchronize()
    return start.elapsed_time(end), own


def wait_value(stream, flag: torch.Tensor, seq: int) -> None:
    """cuStreamWaitValue32(stream, &flag, seq, GEQ) through the driver API (cuda-python or ctypes)."""
    import ctypes

    lib = ctypes.CDLL("libcuda.so.1")
    CU_STREAM_WAIT_VALUE_GEQ = 0x0
    fn = getattr(lib, "cuStreamWaitValue32_v2", None) or lib.cuStreamWaitValue32
    rc = fn(ctypes.c_void_p(stream.cuda_stream), ctypes.c_uint64(flag.data_ptr()),
                                   ctypes.c_uint32(seq), ctypes.c_uint(CU_STREAM_WAIT_VALUE_GEQ))
    if rc != 0:
        raise RuntimeError(f"cuStreamWaitValue32_v2 failed: {rc}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--modes", nargs="*", default=["gate1", "gate3", "waitvalue", "hostpoll", "nogate"])
    args = parser.parse_args()
    from kernel_gym.harness.timing import sleep_cycles_per_ms

    device = torch.device("cuda", 0)
    torch.cuda.init()
    cycles_per_ms = sleep_cycles_per_ms(device)
    go = torch.cuda.Event(interprocess=True)
    done = torch.cuda.Event(interprocess=True)
    flag = torch.zeros(1, dtype=torch.int32, device=device)
    flush = torch.empty(256 << 18, dtype=torch.int32, device=device)
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=worker, args=(child, {"go": go.ipc_handle(), "done": done.ipc_handle()}, flag))
    proc.start()
    assert parent.recv() == "ready"
    results: dict[str, dict[str, float]] = {}
    parent.send(("hostcost", None, 20))
    print("host cost per stream operation:", json.dumps(parent.recv()), flush=True)
    seq = 0
    for name in WORKLOADS:
        row: dict[str, float] = {}
        parent.send(("self", name, args.n))
        row["self"] = statistics.median(parent.recv()[5:])
        for mode in args.modes:
            gate = {"gate1": 1.0, "gate3": 3.0, "waitvalue": 1.0, "hostpoll": 1.0, "nogate": 0.0}[mode]
            judge, own = [], []
            try:
                for _ in range(args.n):
                    seq += 1
                    j, o = judge_time(parent, go, done, flag, name, gate, cycles_per_ms, mode, seq, flush)
                    judge.append(j)
                    own.append(o)
            except Exception as exc:  # noqa: BLE001 - a mode this driver lacks is a finding, not a crash
                row[f"{mode}_error"] = repr(exc)[:200]
                continue
            row[f"{mode}_judge"] = statistics.median(judge[5:])
            row[f"{mode}_own"] = statistics.median(own[5:])
            row[f"{mode}_judge_p90"] = statistics.quantiles(judge[5:], n=10)[-1]
        results[name] = row
        print(name, json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    parent.send(None)
    proc.join(10)
    print("\n| workload | self ms | " + " | ".join(f"{m} judge / own" for m in args.modes) + " |")
    print("|---|---|" + "---|" * len(args.modes))
    for name, row in results.items():
        cells = [f"{row[f'{m}_judge']:.4f} / {row[f'{m}_own']:.4f}" if f"{m}_judge" in row else "error"
                 for m in args.modes]
        print(f"| {name} | {row['self']:.4f} | " + " | ".join(cells) + " |")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "probe_clock.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
