"""Does one process's faulty kernel stall another process's GPU work? (#35: which faults can stall the other jobs,
so which timeouts beside them need a confirmation: kernel_gym/judge/stalls.py.)

For each fault of tests/solutions/faults (`spin_first_call`: a kernel that never ends; `trap`: `__trap()`;
`illegal_access`: a wild store) and `none` (the genuine relu, called in a loop), a child process calls the solution's
forward on the GPU and says when its kernel is launched (just before its `torch.cuda.synchronize()`). This process,
standing in for the judge, launches a tiny probe kernel every 50 ms in its own context and records how long each
took from launch to completion, for HOLD_S after the launch; then the child is killed (as the judge kills a runner at
its limit) and probing goes on for AFTER_S. Per fault: the probes' latency during the fault and after the kill, and
how the child ended. A fault whose probes finish in milliseconds does not stall other processes; one whose probes
wait until the kill does.

    python benchmarks/probe_stall.py --faults none spin_first_call trap illegal_access --out probe_stall.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parents[1] / "tests" / "solutions"
HOLD_S, AFTER_S, PROBE_EVERY_S = 6.0, 3.0, 0.05

CHILD = r"""
import importlib.util, sys, time
import torch
name = sys.argv[1]
path = sys.argv[2]
spec = importlib.util.spec_from_file_location("solution", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
real_sync = torch.cuda.synchronize
def sync(*a, **k):
    print("launched", flush=True)
    return real_sync(*a, **k)
torch.cuda.synchronize = sync
x = torch.randn(1 << 22, device="cuda")
model = mod.ModelNew().cuda()
try:
    if name == "none":
        print("launched", flush=True)
        while True:
            model(x)
    else:
        model(x)
        print("returned", flush=True)
        real_sync()
        print("synchronized", flush=True)
except Exception as e:
    print("error", type(e).__name__, str(e).splitlines()[0][:200], flush=True)
    sys.exit(3)
time.sleep(3600)
"""


def probe_once(torch, x, until: float) -> float:
    """Seconds from a tiny kernel's launch to its completion in this process's context; inf if not done by `until`
    (a later probe then completes only after it: one stream)."""
    done = torch.cuda.Event()
    t0 = time.perf_counter()
    x.add_(1)
    done.record()
    while not done.query():
        if time.perf_counter() > until:
            return float("inf")
        time.sleep(0.0005)
    return time.perf_counter() - t0


def run_fault(torch, x, name: str) -> dict:
    path = SOLUTIONS / "level1_relu.py" if name == "none" else SOLUTIONS / "faults" / f"{name}.py"
    child = subprocess.Popen([sys.executable, "-c", CHILD, name, str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    t_start = time.perf_counter()
    while True:  # until the child launched its kernel (or ended)
        line = child.stdout.readline()
        if not line:
            break
        lines.append(line.strip())
        if line.startswith("launched"):
            break
    t_launch = time.perf_counter()
    during, after = [], []
    while time.perf_counter() - t_launch < HOLD_S:
        during.append((round(time.perf_counter() - t_launch, 3), probe_once(torch, x, t_launch + HOLD_S)))
        time.sleep(PROBE_EVERY_S)
    state = child.poll()
    child.kill()
    t_kill = time.perf_counter()
    while time.perf_counter() - t_kill < AFTER_S:
        after.append((round(time.perf_counter() - t_kill, 3), probe_once(torch, x, t_kill + AFTER_S)))
        time.sleep(PROBE_EVERY_S)
    rest = child.stdout.read() or ""
    lines += [s for s in rest.splitlines() if s.strip()][-5:]

    def summary(rows: list[tuple[float, float]]) -> dict:
        ms = [lat * 1e3 for _, lat in rows]  # (inf: not done by the end of its window)
        return {"n": len(ms), "p50_ms": round(statistics.median(ms), 3) if ms else None,
                "max_ms": round(max(ms), 3) if ms else None, "over_100ms": sum(1 for m in ms if m > 100),
                "not_done": sum(1 for m in ms if m == float("inf"))}
    return {"fault": name, "child_start_s": round(t_launch - t_start, 2), "child_alive_at_kill": state is None,
            "child_exit": state, "child_said": lines[-6:], "during": summary(during), "after_kill": summary(after),
            "during_rows": during, "after_rows": after}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--faults", nargs="+", default=["none", "spin_first_call", "trap", "illegal_access"])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    import torch

    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    results = []
    for name in args.faults:
        r = run_fault(torch, x, name)
        results.append(r)
        print(f"{name:16s} child start {r['child_start_s']:5.1f} s, alive at kill {r['child_alive_at_kill']}, "
              f"probes during: p50 {r['during']['p50_ms']} ms max {r['during']['max_ms']} ms "
              f"(>100 ms: {r['during']['over_100ms']} of {r['during']['n']}); after the kill: p50 "
              f"{r['after_kill']['p50_ms']} ms max {r['after_kill']['max_ms']} ms; child said {r['child_said'][-2:]}",
              flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
