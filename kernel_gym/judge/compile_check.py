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

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from kernel_gym.harness import cuda
from kernel_gym.harness.errors import trim
from kernel_gym.judge.fast_build import lighter_source
from kernel_gym.paths import cache_dir

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
            ok, log = nvcc_check(source, workdir=Path(workdir))
            if ok and signals is not None:  # registers, shared memory, occupancy of the check's cubin
                from kernel_gym.signals import collect

                signals.update(collect.cuda_compile_signals(source, code, Path(workdir)))
    else:
        options = claim.get("options") or []
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            return False, "the NVRTC options reported for this solution are not a list of strings"
        ok, log = nvrtc_check(source, options)
    return ok, "" if ok else f"{KINDS[kind]}:\n{trim(log)}"


def _cache_dir() -> Path:
    """The nvcc check's results: written by the judge only (judge/compile_check.py), never by a runner."""
    root = cache_dir("nvcc_checks")
    root.mkdir(parents=True, exist_ok=True)
    return root


def nvcc_check(cuda_source: str, *, arch: str = "sm_90", timeout_s: float = 300.0, workdir: Path) -> tuple[bool, str]:
    """Compile CUDA source (torch headers on the include path) to a cubin; (ok, trimmed log). Cached by content.

    nvcc runs as a compile check (kernel_gym/sandbox/toolchain.py): the build processes' allow-listed environment,
    confined to read only the toolchain, the Python install and `workdir` (its source's only folder) and to write
    only `workdir`; a diagnostic located in any other file is withheld from the log."""
    from kernel_gym.sandbox import toolchain

    nvcc = cuda.find_nvcc()
    if nvcc is None:
        return True, "nvcc not found: the CUDA source was not compile-checked"
    # (the version tag: no result of an unconfined check, whose log may quote the judge's files, is served again)
    from kernel_gym.harness import cutlass

    extra = [*[f"-I{d}" for d in cutlass.include_dirs()], *cutlass.NVCC_FLAGS] if cutlass.uses(cuda_source) else []
    key = hashlib.sha256(f"confined-1\0{arch}\0{extra}\0{cuda_source}".encode()).hexdigest()
    cached = _cache_dir() / f"{key}.json"
    if cached.exists():
        d = json.loads(cached.read_text())
        return d["ok"], d["log"]
    from torch.utils.cpp_extension import include_paths

    src = workdir / "check.cu"
    cmd = [str(Path(nvcc).resolve()), "-cubin", f"-arch={arch}", "-std=c++20", "-o", str(workdir / "check.cubin"),
           str(src), "-I" + sysconfig.get_paths()["include"], "-DTORCH_EXTENSION_NAME=check", "-w"]
    cmd += [f"-I{p}" for p in include_paths()] + extra
    light_dir = workdir / "light"
    light_dir.mkdir(exist_ok=True)
    # first with the lightest torch header that suffices (fast_build: 13-24 s of nvcc instead of ~60 s); a failure
    # there is no verdict: the source as written decides
    light = lighter_source(cuda_source, light_dir)
    attempts = ([(light[1], light[0], [f"-I{light_dir}"])] if light else []) + [("stock", cuda_source, [])]
    t0 = time.perf_counter()
    for header, text, flags in attempts:
        src.write_text(text)
        try:
            run = toolchain.run(cmd + flags, workdir, timeout_s)
        except subprocess.TimeoutExpired:
            return False, f"nvcc did not finish within {timeout_s:.0f} s"
        ok = run.returncode == 0
        if ok or header == "stock":
            break
    log = "" if ok else toolchain.redact(run.stderr + run.stdout, workdir)
    log = log.replace(str(src), "cuda_sources")
    cached.write_text(json.dumps({"ok": ok, "log": log, "seconds": time.perf_counter() - t0, "header": header}))
    return ok, log


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
