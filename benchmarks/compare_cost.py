"""What a timed round's output check costs, and where (#36: the 8-client timing stage's median was 727 ms against a
goal of 0.6 s, relu's and layernorm_gemm_gelu's 1.6 s: 512 MiB outputs, ~140 ms a round).

A timed round compares the candidate's outputs with the reference's: the fixed rule's pass
(`judge.compare._compare_values`: NaN placement, degenerate outputs) and the derived budget's pass
(`judge.error_budget.errors`, float64). Both go chunk by chunk (`compare.CHUNK` elements at a time, so that their
temporaries stay small while up to 8 jobs compare at once), and each chunk is ~80 small torch ops: a 512 MiB output is
32 chunks, thousands of launches a pass. This measures, per output size and chunk size, each pass's wall time (the
device synchronized), the aten ops it dispatches, and the judge's peak memory for it, so that the chunk (or a fused
kernel) can be chosen from numbers:

    python benchmarks/compare_cost.py --elements 134217728 --chunks 22 23 24 --out compare_cost.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernel_gym.judge import compare
from kernel_gym.judge.error_budget import errors


class _Ops(TorchDispatchMode):
    """Counts the aten ops dispatched inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's signature
        self.n += 1
        return func(*args, **(kwargs or {}))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _passes(g: torch.Tensor, e: torch.Tensor) -> dict:
    return {"fixed": lambda: compare._compare_values(0, g, e, 1e-4, 1e-4, 1e-2),  # noqa: SLF001
            "budget": lambda: errors(g, e, e)}


def measure(elements: int, chunk_log2: int, device: torch.device, repeats: int) -> dict:
    """Each pass's median wall time over `repeats`, its op count and peak memory, at CHUNK = 2**chunk_log2."""
    gen = torch.Generator(device=device).manual_seed(0)
    e = torch.randn(elements, device=device, generator=gen)
    g = e + 1e-6 * torch.randn(elements, device=device, generator=gen)
    saved = compare.CHUNK
    compare.CHUNK = 1 << chunk_log2
    row: dict = {"elements": elements, "chunk": 1 << chunk_log2, "device": str(device)}
    try:
        for name, run in _passes(g, e).items():
            run()  # (warm: the allocator's blocks, kernels' first launches)
            with _Ops() as ops:
                run()
            times = []
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
                base = torch.cuda.memory_allocated(device)
            for _ in range(repeats):
                _sync(device)
                t0 = time.perf_counter()
                run()
                _sync(device)
                times.append((time.perf_counter() - t0) * 1e3)
            row[name] = {"ms": round(statistics.median(times), 3), "ops": ops.n}
            if device.type == "cuda":
                row[name]["peak_extra_mib"] = round((torch.cuda.max_memory_allocated(device) - base) / 2 ** 20, 1)
    finally:
        compare.CHUNK = saved
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elements", type=int, nargs="+", default=[1 << 27])
    parser.add_argument("--chunks", type=int, nargs="+", default=[22, 23, 24], help="log2 of CHUNK")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    rows = [measure(n, c, device, args.repeats) for n in args.elements for c in args.chunks]
    for row in rows:
        print(json.dumps(row))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name() if device.type == "cuda" else None, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
