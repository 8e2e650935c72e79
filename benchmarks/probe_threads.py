"""Which import of a runner's preload starts a thread (the fork server refuses to fork a process with more than one:
on cuda it reported 2). Prints the process's native threads by name after each step, as the fork server sees them.

    OMP_NUM_THREADS=1 python benchmarks/probe_threads.py
    OMP_NUM_THREADS=1 python benchmarks/probe_threads.py --fork-safe   # the fork server's preload, then the rest
"""

from __future__ import annotations

import importlib
import json
import os

from kernel_gym.runner.forkserver import thread_names

STEPS = ("torch", "torch._dynamo", "torch.profiler", "torch.utils.cpp_extension", "triton", "kernel_gym.harness.cuda",
         "kernel_gym.harness.integrity", "kernel_gym.harness.launches", "kernel_gym.harness.op_audit", "kernel_gym.harness.profile",
         "kernel_gym.runner.session")


def main() -> None:
    import sys

    rows = []
    if "--fork-safe" in sys.argv:
        from kernel_gym.runner.serve import preload

        preload(fork_safe=True)
        print(json.dumps({"after": "preload(fork_safe=True)", "threads": thread_names()}), flush=True)
    for step in STEPS:
        importlib.import_module(step)
        rows.append({"after": step, "threads": thread_names()})
        print(json.dumps(rows[-1]), flush=True)
    import torch

    print(json.dumps({"cuda_initialized": torch.cuda.is_initialized(),
                      "nvml_check": os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")}), flush=True)


if __name__ == "__main__":
    main()
