"""CUDA solutions: `load_inline` inside a worker, isolated per job; on the CPU backend, an nvcc compile check.

The candidate calls `torch.utils.cpp_extension.load_inline` itself when imported. Inside a worker that
function is replaced by `isolated_load_inline`: on cuda it builds under a content-hashed name (sources, flags,
torch/CUDA version and arch) in a build cache, so different sources never share a directory and an identical
resubmission loads in ~0 s, with the light header and precompiled header of `fast_build` (falling back to the
stock build if that fails); on cpu it captures the sources and stops the
import with `CudaSourcesCaptured`, after which `nvcc_check` compiles the CUDA sources to a cubin.
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
from pathlib import Path
from typing import Any

from kernel_gym.eval import fast_build
from kernel_gym.eval.launches import counted_extension

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


KERNEL_NAMES: set[str] = set()  # __global__ functions of every extension this worker built
_GLOBAL = re.compile(r"__global__[^(;{}]*?\b(\w+)\s*\(")
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")


def global_kernel_names(source: str) -> set[str]:
    """Names of the `__global__` functions in CUDA source (what the profiler shows for them)."""
    return set(_GLOBAL.findall(_LAUNCH_BOUNDS.sub(" ", source or "")))


def install(device: str, build_root: Path) -> None:
    """Replace torch.utils.cpp_extension.load_inline for this worker process."""
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
        if device != "cuda":
            raise CudaSourcesCaptured({"name": name, **{k: _as_text(v) if k.endswith("sources") else v
                                                        for k, v in params.items()}})
        digest = hashlib.sha256(repr((sorted((k, repr(v)) for k, v in params.items() if k != "verbose"),
                                      _toolchain_key())).encode())
        KERNEL_NAMES.update(global_kernel_names(_as_text(params.get("cuda_sources"))))
        params.update(verbose=False)
        if fast_build.enabled():
            fast, changes = fast_build.fast_params(params)
            try:
                return counted_extension(_build(f"{name}_{digest.hexdigest()[:15]}f", fast, build_root))
            except Exception as e:  # noqa: BLE001 - the stock build decides; the fast one is only an optimisation
                if not {"cuda_header", "cpp_header"} & changes.keys():
                    raise  # same sources as the stock build: its error is the candidate's
                log.info("fast build failed (%s); retrying with a heavier header", type(e).__name__)
                missing = fast_build.missing_declaration(str(e))
            if changes.get("cuda_header") == "lite" and missing:  # e.g. tensor operators (a + b): torch/types.h
                fast, _ = fast_build.fast_params(params, cuda_header="types")
                try:
                    return counted_extension(_build(f"{name}_{digest.hexdigest()[:15]}t", fast, build_root))
                except Exception as e:  # noqa: BLE001
                    log.info("types-header build failed (%s); building the stock way", type(e).__name__)
        return counted_extension(_build(f"{name}_{digest.hexdigest()[:16]}", params, build_root))

    ext.load_inline = isolated_load_inline


def _build(unique: str, params: dict[str, Any], build_root: Path):
    build_dir = _extension_cache(build_root) / unique
    build_dir.mkdir(parents=True, exist_ok=True)
    return _REAL_LOAD_INLINE(unique, build_directory=str(build_dir), **params)


def _toolchain_key() -> tuple[str, ...]:
    """What besides the sources decides a build: torch, CUDA, and the target architecture."""
    import torch

    arch = os.environ.get("TORCH_CUDA_ARCH_LIST") or ".".join(map(str, torch.cuda.get_device_capability()))
    return torch.__version__, str(torch.version.cuda), arch


def _extension_cache(build_root: Path) -> Path:
    """Builds are cached by content hash (sources, flags, toolchain, arch): a resubmitted kernel costs ~0.

    Shared by the workers of a machine ($KERNEL_GYM_CACHE/extensions); KERNEL_GYM_EXT_CACHE=0 gives every job a
    private build directory instead.
    """
    if os.environ.get("KERNEL_GYM_EXT_CACHE", "1") == "0":
        return Path(os.environ.get("TORCH_EXTENSIONS_DIR", build_root))
    root = Path(os.environ.get("KERNEL_GYM_CACHE", Path.home() / ".cache" / "kernel_gym")) / "extensions"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _cache_dir() -> Path:
    """The nvcc check's results: written by the judge only (judge/compile_check.py), never by a runner."""
    root = Path(os.environ.get("KERNEL_GYM_CACHE", Path.home() / ".cache" / "kernel_gym")) / "nvcc_checks"
    root.mkdir(parents=True, exist_ok=True)
    return root


def find_nvcc() -> str | None:
    cuda_home = os.environ.get("CUDA_HOME")
    if cuda_home and (Path(cuda_home) / "bin" / "nvcc").exists():
        return str(Path(cuda_home) / "bin" / "nvcc")
    return shutil.which("nvcc")


def nvcc_check(cuda_source: str, *, arch: str = "sm_90", timeout_s: float = 300.0, workdir: Path) -> tuple[bool, str]:
    """Compile CUDA source (torch headers on the include path) to a cubin; (ok, trimmed log). Cached by content."""
    nvcc = find_nvcc()
    if nvcc is None:
        return True, "nvcc not found: the CUDA source was not compile-checked"
    key = hashlib.sha256(f"{arch}\0{cuda_source}".encode()).hexdigest()
    cached = _cache_dir() / f"{key}.json"
    if cached.exists():
        d = json.loads(cached.read_text())
        return d["ok"], d["log"]
    from torch.utils.cpp_extension import include_paths

    src = workdir / "check.cu"
    src.write_text(cuda_source)
    cmd = [nvcc, "-cubin", f"-arch={arch}", "-std=c++20", "-o", str(workdir / "check.cubin"), str(src),
           "-I" + sysconfig.get_paths()["include"], "-DTORCH_EXTENSION_NAME=check", "-w"]
    cmd += [f"-I{p}" for p in include_paths()]
    t0 = time.perf_counter()
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=workdir)
    except subprocess.TimeoutExpired:
        return False, f"nvcc did not finish within {timeout_s:.0f} s"
    ok = run.returncode == 0
    log = "" if ok else (run.stderr + run.stdout)
    log = log.replace(str(src), "cuda_sources")
    cached.write_text(json.dumps({"ok": ok, "log": log, "seconds": time.perf_counter() - t0}))
    return ok, log
