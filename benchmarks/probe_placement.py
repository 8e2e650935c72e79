"""Does a kernel's runtime depend on where its buffers land in GPU memory? (plain do_bench, no kernel-gym timing)

    python benchmarks/probe_placement.py --task level2/conv_relu_pool --solution tests/solutions/level2_conv_relu_pool.py

For each trial, in one process: a padding allocation of random size moves the caching allocator, fresh input
tensors are made (same values every trial) and `triton.testing.do_bench` times the model on them. The spread of the
per-trial medians, for the solution and for the reference, says whether a runtime tail seen by the judge belongs to
the kernel and its buffers' placement or to the judge's clock.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    import torch
    import triton

    from kernel_gym.harness.integrity import pin_precision
    from kernel_gym.tasks import load_task, loading

    p = argparse.ArgumentParser()
    p.add_argument("--task", required=True)
    p.add_argument("--solution", required=True)
    p.add_argument("--trials", type=int, default=24)
    p.add_argument("--rep", type=int, default=100, help="do_bench's rep (ms) per trial")
    p.add_argument("--vary-values", action="store_true",
                   help="new input values every trial (seed = trial number), made on the GPU: does the runtime "
                        "depend on the values rather than the placement?")
    args = p.parse_args()
    pin_precision("cuda")
    task = load_task(args.task)
    module = loading.load_reference(task.source, task.sizes_for("cuda"))
    torch.manual_seed(0)
    init = list(module.get_init_inputs())
    out = {}
    for side in ("solution", "reference"):
        torch.manual_seed(0)
        if side == "reference":
            model = module.Model(*init)
        else:
            cand = loading.load_candidate(Path(args.solution).read_text(), Path(tempfile.mkdtemp(prefix="pp_")))
            model = cand.ModelNew(*init)
        model = model.cuda().eval()
        torch.manual_seed(1)
        host = list(module.get_inputs())
        rng = random.Random(7)
        ms, pads = [], []
        for _ in range(args.trials):
            pad = torch.empty(rng.randrange(1, 1 << 27), dtype=torch.uint8, device="cuda")  # up to 128 MiB
            if args.vary_values:
                torch.manual_seed(len(ms))
                with torch.device("cuda"):
                    inputs = list(module.get_inputs())
            else:
                inputs = [v.cuda().clone() if isinstance(v, torch.Tensor) else v for v in host]
            with torch.no_grad():
                ms.append(triton.testing.do_bench(lambda m=model, x=inputs: m(*x), warmup=10, rep=args.rep,
                                                  return_mode="median"))
            pads.append(pad)  # keep it: the next trial's buffers land elsewhere
            if len(pads) > 4:
                pads.pop(0)
        out[side] = {"ms": [round(x, 4) for x in ms], "median": statistics.median(ms), "min": min(ms),
                     "max": max(ms), "spread_pct": 100 * (max(ms) - min(ms)) / statistics.median(ms)}
        print(side, json.dumps(out[side]), flush=True)
        model = None
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
