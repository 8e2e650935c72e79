"""CUDA solutions: `load_inline` inside a worker, isolated per job; on the CPU backend, an nvcc compile check.

The candidate calls `torch.utils.cpp_extension.load_inline` itself when imported. Inside a runner that function is
replaced by `isolated_load_inline`: it sends the call's arguments to the judge, whose build service
(`judge/builds.py`) checks them, builds them in a confined build process (with `fast_build`'s light and precompiled
headers) under a content-hashed name, so an identical resubmission loads in ~0 s, and names the folder the runner
imports the module from (a folder the runner may read, never write). On cpu a call with CUDA sources is captured
instead and stops the import with `CudaSourcesCaptured`, after which the judge's `nvcc_check` compiles the CUDA
sources to a cubin; a C++-only extension is built and runs on cpu too.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import re
import shutil
import subprocess
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_gym.harness.launches import counted_extension
from kernel_gym.paths import cache_dir

log = logging.getLogger(__name__)
_REAL_LOAD_INLINE = None


class CudaSourcesCaptured(Exception):
    """Raised inside a cpu worker in place of building: carries load_inline's arguments."""

    def __init__(self, kwargs: dict[str, Any]):
        super().__init__("load_inline captured")
        self.kwargs = kwargs


def _as_text(src: Any) -> str:
    if src is None:
        return ""
    return "\n".join(src) if isinstance(src, (list, tuple)) else str(src)


KERNEL_NAMES: set[str] = set()  # __global__ functions of the extensions this job built (cleared per job)
_GLOBAL = re.compile(r"__global__[^(;{}]*?\b(\w+)\s*\(")
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")


def global_kernel_names(source: str) -> set[str]:
    """Names of the `__global__` functions in CUDA source (what the profiler shows for them)."""
    return set(_GLOBAL.findall(_LAUNCH_BOUNDS.sub(" ", source or "")))


class BuildError(RuntimeError):
    """A load_inline build the judge's build service refused or that failed (a compile error of the solution)."""


# How a runner asks its judge for a build (set by the runner: `runner/serve.py`); None outside a runner.
BUILD_SERVICE: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def _plain(value: Any) -> Any:
    """load_inline's arguments as JSON data (tuples as lists); anything else as its repr, which the judge refuses."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


def install(device: str) -> None:
    """Replace torch.utils.cpp_extension.load_inline for this runner: on cpu a call with CUDA sources is captured
    (the judge compile-checks them); otherwise the judge's build service builds (judge/builds.py) and the module
    is imported from the folder it names, which this process can only read."""
    import torch.utils.cpp_extension as ext

    global _REAL_LOAD_INLINE
    if _REAL_LOAD_INLINE is None:
        _REAL_LOAD_INLINE = ext.load_inline

    signature = inspect.signature(_REAL_LOAD_INLINE)

    def isolated_load_inline(*args: Any, **kwargs: Any):
        bound = signature.bind(*args, **kwargs)
        params = dict(bound.arguments)
        params.update(params.pop("kwargs", {}) or {})
        name = params.pop("name")
        if device != "cuda" and (params.get("cuda_sources") or params.get("with_cuda")):
            raise CudaSourcesCaptured({"name": name, **{k: _as_text(v) if k.endswith("sources") else v
                                                        for k, v in params.items()}})
        KERNEL_NAMES.update(global_kernel_names(_as_text(params.get("cuda_sources"))))
        if BUILD_SERVICE is None:
            raise BuildError("load_inline builds are the judge's: this process has no build service")
        sent = {k: _plain(v) for k, v in params.items() if v is not None and k not in ("verbose", "build_directory")}
        answer = BUILD_SERVICE({"name": name if isinstance(name, str) else repr(name), "params": sent})
        if not answer.get("ok"):
            raise BuildError(f"Error building extension '{name}':\n{answer.get('log', '')}")
        module = ext._import_module_from_library(answer["module"], answer["directory"],  # noqa: SLF001
                                                 params.get("is_python_module", True) is not False)
        return counted_extension(module)

    ext.load_inline = isolated_load_inline


def _cache_dir() -> Path:
    """The nvcc check's results: written by the judge only (judge/compile_check.py), never by a runner."""
    root = cache_dir("nvcc_checks")
    root.mkdir(parents=True, exist_ok=True)
    return root


def find_nvcc() -> str | None:
    cuda_home = os.environ.get("CUDA_HOME")
    if cuda_home and (Path(cuda_home) / "bin" / "nvcc").exists():
        return str(Path(cuda_home) / "bin" / "nvcc")
    return shutil.which("nvcc")


def nvcc_check(cuda_source: str, *, arch: str = "sm_90", timeout_s: float = 300.0, workdir: Path) -> tuple[bool, str]:
    """Compile CUDA source (torch headers on the include path) to a cubin; (ok, trimmed log). Cached by content.

    nvcc runs as a compile check (kernel_gym/sandbox/toolchain.py): the build processes' allow-listed environment,
    confined to read only the toolchain, the Python install and `workdir` (its source's only folder) and to write
    only `workdir`; a diagnostic located in any other file is withheld from the log."""
    from kernel_gym.sandbox import toolchain

    nvcc = find_nvcc()
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
    src.write_text(cuda_source)
    cmd = [str(Path(nvcc).resolve()), "-cubin", f"-arch={arch}", "-std=c++20", "-o", str(workdir / "check.cubin"),
           str(src), "-I" + sysconfig.get_paths()["include"], "-DTORCH_EXTENSION_NAME=check", "-w"]
    cmd += [f"-I{p}" for p in include_paths()] + extra
    t0 = time.perf_counter()
    try:
        run = toolchain.run(cmd, workdir, timeout_s)
    except subprocess.TimeoutExpired:
        return False, f"nvcc did not finish within {timeout_s:.0f} s"
    ok = run.returncode == 0
    log = "" if ok else toolchain.redact(run.stderr + run.stdout, workdir)
    log = log.replace(str(src), "cuda_sources")
    cached.write_text(json.dumps({"ok": ok, "log": log, "seconds": time.perf_counter() - t0}))
    return ok, log
