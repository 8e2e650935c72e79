"""Faster `load_inline` builds with the same results: a light torch header for the CUDA file, and a precompiled
header (PCH) for the generated C++ binding file.

A stock `load_inline` CUDA build compiles two files in parallel, both starting with `#include <torch/extension.h>`
(all of libtorch's C++ API, nn/optim/serialize included, and pybind11): nvcc parses it three times (cudafe++, cicc,
the host compiler) for `cuda.cu`, g++ once more for `main.cpp`. Measured on this project's CPU VM (nvcc -c, sm_90):
the CUDA file takes 60 s with `torch/extension.h`, 24 s with `torch/types.h` and 13 s with the light header below.

- **Light header** (`cuda.cu`): when the CUDA source includes `torch/extension.h` and uses nothing outside tensors,
  factories (`empty`, `zeros`, ...), dtypes/options, dispatch macros, `TORCH_CHECK` and CUDA streams/guards
  (decided from the `torch::`/`at::` names it uses), the include is replaced by `kernel_gym_torch_lite.h`, which
  includes exactly those ATen/c10 headers and, like `torch/types.h`, makes `torch::` an alias of `at::`; the
  `#include <torch/types.h>` that load_inline puts before every CUDA file is declined for such sources. Sources
  that use more (pybind11, `torch::nn`, ops such as `torch::matmul`) get `torch/types.h` when they need no pybind11,
  else the stock header. The compiled kernels and wrappers are the same code either way.
- **PCH** (`main.cpp`): `torch/extension.h` precompiled once per (compiler flags, include paths, torch version) into
  `$KERNEL_GYM_CACHE/pch/<key>/torch/extension.h.gch`, whose directory is put first on the include path: g++ uses
  the `.gch` when it is valid and silently falls back to the real header when it is not (never a wrong build).
  Unlike `load_inline(use_pch=True)` (one PCH inside torch's install, rebuilt whenever flags change, and deleted
  by any `use_pch=False` call) these are keyed by flags, shared by all workers, and built under a file lock.

If a fast build fails, the stock build runs (the verdict never depends on this module). KERNEL_GYM_FAST_BUILD=0
turns it off.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import subprocess
import sysconfig
import time
from pathlib import Path
from typing import Any

LITE_HEADER = "kernel_gym_torch_lite.h"
_LITE_TEXT = """#pragma once
// kernel-gym: the parts of <torch/extension.h> a CUDA file of a load_inline extension typically uses.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/full_like.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
namespace at::cuda {  // what ATen/cuda/CUDAContext.h adds, without ATen/Context.h
using c10::cuda::CUDAStream;
using c10::cuda::getCurrentCUDAStream;
using c10::cuda::getDefaultCUDAStream;
}  // namespace at::cuda
namespace torch {
using namespace at;  // as torch/types.h does
}
"""
_EXTENSION_INCLUDE = re.compile(r'#\s*include\s*[<"]torch/extension\.h[>"]')
_NAMES = re.compile(r"\b(?:torch|at|c10)::(\w+)")
_PYBIND = re.compile(r"\bpybind11\b|PYBIND11_|\bpy::")
# First names after torch::/at::/c10:: that the light header provides.
LITE_NAMES = frozenset("""
Tensor TensorBase TensorOptions ScalarType Scalar Device DeviceType DeviceGuard IntArrayRef SymIntArrayRef Layout
MemoryFormat Half BFloat16 kCUDA kCPU kFloat kFloat32 kFloat16 kHalf kBFloat16 kDouble kFloat64 kInt kInt32 kLong
kInt64 kShort kInt16 kChar kInt8 kByte kUInt8 kBool kStrided empty empty_like empty_strided zeros zeros_like ones
ones_like full full_like dtype device layout requires_grad cuda OptionalCUDAGuard CUDAGuard CUDAStream
PackedTensorAccessor PackedTensorAccessor32 PackedTensorAccessor64 TensorAccessor RestrictPtrTraits DefaultPtrTraits
ArrayRef optional nullopt irange elementSize toString typeMetaToScalarType Error
""".split())


def enabled() -> bool:
    return os.environ.get("KERNEL_GYM_FAST_BUILD", "1") != "0"


def _root() -> Path:
    return Path(os.environ.get("KERNEL_GYM_CACHE", Path.home() / ".cache" / "kernel_gym"))


def _text(src: Any) -> str:
    return "\n".join(src) if isinstance(src, (list, tuple)) else (src or "")


def header_choice(cuda_source: str) -> str:
    """"lite", "types" or "stock": the lightest header that gives this CUDA source what it uses."""
    if not _EXTENSION_INCLUDE.search(cuda_source):
        return "stock"  # it includes what it wants itself
    if _PYBIND.search(cuda_source):
        return "stock"
    if set(_NAMES.findall(cuda_source)) <= LITE_NAMES:
        return "lite"
    return "types"


class _WithoutTypesHeader(list):
    """CUDA sources for load_inline that decline its `#include <torch/types.h>` prefix (all of ATen/ATen.h: most
    of the CUDA file's compile time). load_inline inserts that line into the list it is given; the light header
    already provides what the source uses. The other prefixed includes (<cuda.h>, <cuda_runtime.h>) stay."""

    skipped = 0

    def insert(self, index, item):  # noqa: ANN001 - list's signature
        if item.strip() == "#include <torch/types.h>":
            self.skipped += 1
            return
        super().insert(index - self.skipped, item)  # the other prefixes keep their place before the source


def lite_include_dir() -> Path:
    d = _root() / "fast_build" / "include"
    d.mkdir(parents=True, exist_ok=True)
    path = d / LITE_HEADER
    if not path.exists() or path.read_text() != _LITE_TEXT:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LITE_TEXT)
        os.replace(tmp, path)
    return d


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    return [v] if isinstance(v, str) else list(v)


def pch_dir(extra_cflags: list[str], extra_include_paths: list[str]) -> Path | None:
    """The directory holding `torch/extension.h.gch` built with these flags (built now if missing); None when
    precompiling fails (the build then simply parses the header)."""
    import torch
    from torch.utils.cpp_extension import get_cxx_compiler

    compiler = get_cxx_compiler()
    include = Path(torch.__file__).parent / "include"
    flags = [f"-I{include}", f"-I{sysconfig.get_path('include')}", f"-I{include / 'torch/csrc/api/include'}",
             *[f"-I{p}" for p in extra_include_paths], *extra_cflags, "-DTORCH_API_INCLUDE_EXTENSION_H",
             "-std=c++20", "-fPIC"]
    key = hashlib.sha256(repr((compiler, flags, torch.__version__)).encode()).hexdigest()[:20]
    out_dir = _root() / "pch" / key
    gch = out_dir / "torch" / "extension.h.gch"
    if gch.exists():
        return out_dir
    gch.parent.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker builds, the others wait for it
        if gch.exists():
            return out_dir
        tmp = gch.with_suffix(f".{os.getpid()}.tmp")
        cmd = [compiler, "-x", "c++-header", str(include / "torch" / "extension.h"), "-o", str(tmp), *flags]
        t0 = time.perf_counter()
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            (out_dir / "error.log").write_text(shlex.join(cmd) + "\n" + run.stderr[-4000:])
            tmp.unlink(missing_ok=True)
            return None
        os.replace(tmp, gch)
        (out_dir / "built.txt").write_text(f"{time.perf_counter() - t0:.1f} s\n{shlex.join(cmd)}\n")
    return out_dir


def fast_params(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """load_inline keyword arguments for the fast build, and what was changed (for logs and benchmarks)."""
    params = dict(params)
    changes: dict[str, str] = {}
    cuda_src = _text(params.get("cuda_sources"))
    choice = header_choice(cuda_src) if cuda_src else "stock"
    if choice != "stock":
        header = f"#include <{LITE_HEADER}>" if choice == "lite" else "#include <torch/types.h>"
        swapped = _EXTENSION_INCLUDE.sub(header, cuda_src, count=1)
        params["cuda_sources"] = _WithoutTypesHeader([swapped]) if choice == "lite" else swapped
        if choice == "lite":
            params["extra_cuda_cflags"] = [*_as_list(params.get("extra_cuda_cflags")), f"-I{lite_include_dir()}"]
        changes["cuda_header"] = choice
    extra_cflags = _as_list(params.get("extra_cflags"))
    pch = pch_dir(extra_cflags, _as_list(params.get("extra_include_paths")))
    if pch is not None:
        params["extra_cflags"] = [f"-I{pch}", *extra_cflags]  # first on the path: g++ finds the .gch there
        changes["pch"] = pch.name
    params.pop("use_pch", None)  # torch's own PCH: one per install, rebuilt per flag set; ours replaces it
    return params, changes
