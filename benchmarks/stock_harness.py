"""A stock serial evaluation of ONE kernel, the way KernelBench's harness does it, for speed comparisons.

    python benchmarks/stock_harness.py --ref REF.py --solution SOLUTION.py [--trials 100] [--device cuda]

Run as a fresh process per kernel: import torch, build the reference, import the solution (a stock
`torch.utils.cpp_extension.load_inline` build into a fresh TORCH_EXTENSIONS_DIR, or a Triton JIT at first call),
check 5 correctness trials (atol = rtol = 1e-2 on fresh seeded inputs), then time candidate and reference with
CUDA events (3 warm-ups, `--trials` timed calls, a synchronize before each). Prints one JSON line with the verdict
and its phase times. Nothing from kernel_gym is used for the evaluation itself (only to read the task file).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

T_START = time.perf_counter()


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def time_calls(torch, fn, inputs, trials: int) -> float:
    for _ in range(3):
        fn(*inputs)
    torch.cuda.synchronize()
    times = []
    for _ in range(trials):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ref", required=True)
    parser.add_argument("--solution", required=True)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    os.environ["TORCH_EXTENSIONS_DIR"] = tempfile.mkdtemp(prefix="stock_ext_")  # no build reuse across kernels
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    import torch

    torch.cuda.init()
    torch.empty(1, device=args.device)
    phases["init_s"] = time.perf_counter() - t0
    out: dict = {"solution": os.path.basename(args.solution)}
    try:
        t0 = time.perf_counter()
        ref_mod = load(args.ref, "reference")
        cand_mod = load(args.solution, "solution")  # load_inline builds here
        phases["import_compile_s"] = time.perf_counter() - t0
        torch.manual_seed(0)
        init = ref_mod.get_init_inputs()
        torch.manual_seed(0)
        ref = ref_mod.Model(*init).to(args.device)
        torch.manual_seed(0)
        cand = cand_mod.ModelNew(*init).to(args.device)
        t0 = time.perf_counter()
        correct = True
        with torch.no_grad():
            for trial in range(5):
                torch.manual_seed(1000 + trial)
                inputs = [x.to(args.device) if isinstance(x, torch.Tensor) else x for x in ref_mod.get_inputs()]
                got, want = cand(*inputs), ref(*inputs)
                torch.cuda.synchronize()
                if got.shape != want.shape or not torch.allclose(got, want, atol=1e-2, rtol=1e-2):
                    correct = False
                    break
            phases["correctness_s"] = time.perf_counter() - t0
            if correct:
                t0 = time.perf_counter()
                runtime = time_calls(torch, cand, inputs, args.trials)
                baseline = time_calls(torch, ref, inputs, args.trials)
                phases["timing_s"] = time.perf_counter() - t0
                out.update(runtime_ms=runtime, baseline_ms=baseline, speedup=baseline / runtime)
        out["correct"] = correct
    except Exception as e:  # noqa: BLE001 - a verdict, as in KernelBench
        out.update(correct=False, error=f"{type(e).__name__}: {str(e)[:300]}")
    phases["total_s"] = time.perf_counter() - T_START
    out["phases"] = {k: round(v, 3) for k, v in phases.items()}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
