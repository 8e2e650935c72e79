"""The judge's own compile check of a CUDA solution on the CPU backend, where CUDA kernels are compiled, never run.

A cpu runner imports the solution; its `load_inline` (nvcc) or `kernel_gym.cuda_raw.compile` (NVRTC) call is
captured there, and the runner reports the CUDA source as a claim. The judge decides `compiled` (a reward input:
TritonRL's syntax term) by compiling that source itself: nvcc as a subprocess of the judge (a compiler run on text,
never the candidate's code; results cached by content in a cache no runner may write), NVRTC in a short-lived
subprocess, bypassing the runners' build caches. Both run like a build process (kernel_gym/sandbox/toolchain.py): an
allow-listed environment with no secret in it (on cpu the judge is the trainer's process, API keys included),
Landlock that lets the compiler read only the toolchain, the Python install and the check's own folder (an
`#include "/proc/self/environ"` or of a file in a home folder cannot be opened), and a log from which every
diagnostic located outside the check's folder and the toolchain is withheld. A runner never says "compiled".
What a runner taken over by its solution can still do is report a different source than its real call's: the check
accepts only a source whose every `__global__` kernel is named in the solution's code, so a forged claim needs a CUDA
source that compiles and that the solution carries itself (docs/anti-hacking.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from kernel_gym.harness import cuda
from kernel_gym.harness.errors import trim

NVRTC_TIMEOUT_S = 120.0
KINDS = {"nvcc": "nvcc failed on cuda_sources", "nvrtc": "NVRTC failed on the CUDA source"}


def verify(claim: Any, code: str, signals: dict[str, float] | None = None) -> tuple[bool, str]:
    """(compiles, message): the judge's compile of the source a runner reported for this solution's `code`; for an
    nvcc source that compiles, its structure and resource signals go into `signals`."""
    if not isinstance(claim, dict) or claim.get("kind") not in KINDS or not isinstance(claim.get("source"), str):
        return False, "the solution's process reported no CUDA source to check"
    source, kind = claim["source"], claim["kind"]
    names = cuda.global_kernel_names(source)
    missing = sorted(n for n in names if n not in code)
    if not names or missing:
        return False, ("the CUDA source reported for this solution defines "
                       + (f"kernels its code does not name ({', '.join(missing[:5])})" if names else "no kernel"))
    if kind == "nvcc":
        with tempfile.TemporaryDirectory(prefix="kernel_gym_check_") as workdir:
            ok, log = cuda.nvcc_check(source, workdir=Path(workdir))
            if ok and signals is not None:  # registers, shared memory, occupancy of the check's cubin
                from kernel_gym.signals import collect

                signals.update(collect.cuda_compile_signals(source, code, Path(workdir)))
    else:
        options = claim.get("options") or []
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            return False, "the NVRTC options reported for this solution are not a list of strings"
        ok, log = nvrtc_check(source, options)
    return ok, "" if ok else f"{KINDS[kind]}:\n{trim(log)}"


def nvrtc_check(source: str, options: list[str]) -> tuple[bool, str]:
    """NVRTC on `source` in a subprocess of the judge (a compiler fault cannot take the judge down), for the arch
    the CPU backend targets, with no build cache, confined as a compile check (kernel_gym/sandbox/toolchain.py)."""
    from kernel_gym import nvrtc
    from kernel_gym.sandbox import toolchain

    with tempfile.TemporaryDirectory(prefix="kernel_gym_check_") as folder:
        request = json.dumps({"source": source, "options": options, "arch": nvrtc.cpu_arch()})
        try:
            run = toolchain.run_process([sys.executable, "-m", "kernel_gym.judge.compile_check", folder], Path(folder),
                                        NVRTC_TIMEOUT_S, stdin=request)
        except subprocess.TimeoutExpired:
            return False, f"NVRTC did not finish within {NVRTC_TIMEOUT_S:.0f} s"
        try:
            reply = json.loads(run.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return False, f"the NVRTC check failed (exit {run.returncode}): {trim(run.stderr, 1500)}"
        return bool(reply.get("ok")), toolchain.redact(str(reply.get("log", "")), Path(folder))


def main() -> None:
    """`python -m kernel_gym.judge.compile_check FOLDER`: one NVRTC compile, the request and the answer as JSON. The
    process confines itself to FOLDER (its working directory) once NVRTC and the options are loaded."""
    import cuda.bindings.nvrtc  # noqa: F401 - loaded before the confinement

    from kernel_gym import nvrtc
    from kernel_gym.c_params import kernel_signatures
    from kernel_gym.sandbox import toolchain

    request = json.loads(sys.stdin.read())
    source = request["source"]
    options = nvrtc.nvrtc_options(request.get("arch") or nvrtc.cpu_arch(), request["options"])
    names = list(kernel_signatures(source))
    toolchain.confine(Path(sys.argv[1] if len(sys.argv) > 1 else os.getcwd()))
    try:
        nvrtc.compile_program(source, names, options)
        answer = {"ok": True, "log": ""}
    except nvrtc.CompileError as e:
        answer = {"ok": False, "log": e.log}
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
