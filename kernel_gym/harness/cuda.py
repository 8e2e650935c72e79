"""CUDA solutions: `load_inline` inside a worker, isolated per job; on the CPU backend, an nvcc compile check.

The candidate calls `torch.utils.cpp_extension.load_inline` itself when imported. Inside a runner that function is
replaced by `isolated_load_inline`: it sends the call's arguments to the judge, whose build service
(`judge/builds.py`) checks them, builds them in a confined build process (with `fast_build`'s light and precompiled
headers) under a content-hashed name, so an identical resubmission loads in ~0 s, and names the folder the runner
imports the module from (a folder the runner may read, never write). On cpu a call with CUDA sources is captured
instead and stops the import with `CudaSourcesCaptured`, after which the judge's `nvcc_check` (judge/compile_check.py) compiles the CUDA
sources to a cubin; a C++-only extension is built and runs on cpu too.
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_gym.harness.launches import counted_extension

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


def find_nvcc() -> str | None:
    cuda_home = os.environ.get("CUDA_HOME")
    if cuda_home and (Path(cuda_home) / "bin" / "nvcc").exists():
        return str(Path(cuda_home) / "bin" / "nvcc")
    return shutil.which("nvcc")
