"""Per-stage latency of one env step (parse, checks, compile, correctness, timing) on the current device.

    python benchmarks/step_latency.py [--device cuda] [--repeats 3] [--out results.json]

Steps a genuine Triton and a genuine CUDA (load_inline) solution for level1/relu through one env (one warm
worker), a few times each, and prints the stage times of every step as a markdown table. The first CUDA step
includes the cold load_inline build; later identical steps reuse nothing across jobs except the extension
build cache on disk.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import gymnasium as gym

import kernel_gym  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = {
    "triton": ROOT / "tests/solutions/level1_relu.py",
    "cuda": ROOT / "tests/solutions/cuda/level1_relu.py",
}
STAGES = ("parse", "compile", "correctness", "timing", "step")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", default="triton,cuda")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = []
    t0 = time.perf_counter()
    env = gym.make("KernelRefine-v0", task="level1/relu", device=args.device, max_turns=100, compile_timeout_s=900)
    env.reset(seed=0)
    env.unwrapped.evaluator.pool.warm_up()
    print(f"worker ready after {time.perf_counter() - t0:.2f} s")
    for backend in args.backends.split(","):
        code = SOLUTIONS[backend].read_text()
        for i in range(args.repeats):
            _, _, _, _, info = env.step(f"Step {i}.\n```python\n{code}```\n")
            row = {"backend": backend, "repeat": i, "outcome": info["outcome"], "speedup": info["speedup"],
                   **{s: info["stage_ms"].get(s) for s in STAGES}}
            rows.append(row)
    env.close()
    print("| backend | repeat | outcome | speedup | " + " | ".join(f"{s} ms" for s in STAGES) + " |")
    print("|---|---|---|---|" + "---|" * len(STAGES))
    for r in rows:
        cells = [f"{r[s]:.1f}" if r[s] is not None else "-" for s in STAGES]
        sp = f"{r['speedup']:.3f}" if r["speedup"] is not None else "-"
        print(f"| {r['backend']} | {r['repeat']} | {r['outcome']} | {sp} | " + " | ".join(cells) + " |")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
