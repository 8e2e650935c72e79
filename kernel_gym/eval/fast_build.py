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

In a build process (judge/builder.py) `SCRATCH` is its staging folder: the light headers are written there, and a PCH
missing from the cache is built there; the build process may not write the cache (its compiler runs with the
candidate's flags, which may name any output file it can write). The judge publishes the PCH of the request's own
key into `$KERNEL_GYM_CACHE/pch/<key>` after the build process ended (`publish_pch`), and a cached PCH folder is used
only when its text files are exactly what this module writes (keyed by the flags, verified by content).
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

from kernel_gym.paths import cache_dir

LITE_PREFIX = "kernel_gym_torch_lite"
BIND_HEADER = "kernel_gym_bind_lite.h"
_BIND_TEXT = """#pragma once
// kernel-gym: what load_inline's generated main.cpp needs when its C++ sources only declare functions on tensors:
// pybind11 (with its STL casters), torch's tensor caster, and torch::wrap_pybind_function.
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>
#include <ATen/core/Tensor.h>
"""
_FORWARD_TEXT = """#pragma once
// kernel-gym: beside the precompiled torch/extension.h.gch (eval/fast_build.py); an include that cannot use the .gch
#include_next <torch/extension.h>
"""
_EXTENSION_INCLUDE = re.compile(r'#\s*include\s*[<"]torch/extension\.h[>"]')
_NAMES = re.compile(r"\b(?:torch|at|c10)::(\w+)")
_CUDA_NAMES = re.compile(r"\b(?:torch|at|c10)::cuda::(\w+)")
_PYBIND = re.compile(r"\bpybind11\b|PYBIND11_|\bpy::")
_USING = re.compile(r"\busing\s+namespace\s+(?:torch|at|c10)\b")
# First names after torch::/at::/c10:: that the light headers provide.
LITE_NAMES = frozenset("""
Tensor TensorBase TensorOptions ScalarType Scalar Device DeviceType DeviceGuard IntArrayRef SymIntArrayRef Layout
MemoryFormat Half BFloat16 kCUDA kCPU kFloat kFloat32 kFloat16 kHalf kBFloat16 kDouble kFloat64 kInt kInt32 kLong
kInt64 kShort kInt16 kChar kInt8 kByte kUInt8 kBool kStrided empty empty_like empty_strided zeros zeros_like ones
ones_like full full_like dtype device layout requires_grad cuda OptionalCUDAGuard CUDAGuard CUDAStream
PackedTensorAccessor PackedTensorAccessor32 PackedTensorAccessor64 TensorAccessor RestrictPtrTraits DefaultPtrTraits
ArrayRef optional nullopt irange elementSize toString typeMetaToScalarType Error
""".split())
_FACTORIES = frozenset("empty empty_like empty_strided zeros zeros_like ones ones_like full full_like".split())
_STREAM_NAMES = frozenset("CUDAStream getCurrentCUDAStream getDefaultCUDAStream getStreamFromPool".split())
_GUARD_NAMES = frozenset("CUDAGuard OptionalCUDAGuard CUDAStreamGuard OptionalCUDAStreamGuard".split())
_CONTEXT_NAMES = frozenset("getCurrentDeviceProperties getDeviceProperties getCurrentCUDABlasHandle "
                           "getCurrentCUDABlasLtHandle getCurrentCUDASparseHandle getCurrentCUDASolverDnHandle "
                           "warp_size getNumGPUs is_available".split())
# Always in the light CUDA header: the tensor class, dispatch macros, streams and CUDA error checks (cheap next to
# the tensor class). The cuBLAS/cuSPARSE-declaring context header costs as much again as all of these together
# (measured with nvcc here: 7.9 s against 15.5 s for a file of just the includes), so it comes only when used.
_BASE_HEADERS = ("ATen/core/Tensor.h", "ATen/Dispatch.h", "c10/cuda/CUDAStream.h", "c10/cuda/CUDAException.h")
_STREAM_ALIASES = """namespace at::cuda {  // what ATen/cuda/CUDAContext.h adds, without ATen/Context.h
using c10::cuda::CUDAStream;
using c10::cuda::getCurrentCUDAStream;
using c10::cuda::getDefaultCUDAStream;
using c10::cuda::getStreamFromPool;
}  // namespace at::cuda
"""


def torch_aliases() -> str:
    """The `torch::` namespace of torch/types.h (`using namespace at;`, `torch::Dtype`, `torch::kFloat32`, ...),
    read from the installed header: its using-declarations and constants, without its includes."""
    import torch

    text = (Path(torch.__file__).parent / "include" / "torch" / "csrc" / "api" / "include" / "torch" / "types.h"
            ).read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith(("using ", "constexpr auto "))]
    return "namespace torch {  // from torch/types.h\n" + "\n".join(lines) + "\n}  // namespace torch\n"


def bind_text() -> str:
    return _BIND_TEXT + torch_aliases()


def enabled() -> bool:
    return os.environ.get("KERNEL_GYM_FAST_BUILD", "1") != "0"


# Where this process writes what it makes (light headers, a missing PCH): None, the cache itself; a build process
# sets its staging folder (see the module's docstring).
SCRATCH: Path | None = None


def _root() -> Path:
    return cache_dir()


def _scratch() -> Path:
    return SCRATCH if SCRATCH is not None else _root()


def _text(src: Any) -> str:
    return "\n".join(src) if isinstance(src, (list, tuple)) else (src or "")


def header_choice(cuda_source: str) -> str:
    """"lite", "types" or "stock": the lightest header that gives this CUDA source what it uses."""
    if not _EXTENSION_INCLUDE.search(cuda_source):
        return "stock"  # it includes what it wants itself
    if _PYBIND.search(cuda_source):
        return "stock"
    if _USING.search(cuda_source):
        return "types"  # unqualified torch names: which headers they need cannot be read off the source
    known_cuda = _STREAM_NAMES | _GUARD_NAMES | _CONTEXT_NAMES
    if set(_NAMES.findall(cuda_source)) <= LITE_NAMES and set(_CUDA_NAMES.findall(cuda_source)) <= known_cuda:
        return "lite"
    return "types"


def lite_headers(cuda_source: str) -> tuple[str, ...]:
    """The ATen/c10 headers of the light header for this source: the base set, the factory ops it names, and the
    CUDA guard and context headers only when it uses them."""
    names = set(_NAMES.findall(cuda_source))
    cuda_names = set(_CUDA_NAMES.findall(cuda_source)) | names
    out = [*_BASE_HEADERS, *(ops_header(n) for n in sorted(names & _FACTORIES))]
    if cuda_names & _GUARD_NAMES:
        out.append("c10/cuda/CUDAGuard.h")
    if cuda_names & _CONTEXT_NAMES or re.search(r"\bAT_CUDA_CHECK\b|CUDAContext", cuda_source):
        out += ["ATen/cuda/CUDAContextLight.h", "ATen/cuda/Exceptions.h"]
    return tuple(out)


def ops_header(op: str) -> str:
    """A light stand-in for `ATen/ops/<op>.h`, derived from the installed torch's own header: its inline wrappers
    (the same code) over `ATen/ops/<op>_ops.h`, without the includes that pull in ATen/Context.h (about 6 s of a
    CUDA file's compile, measured with nvcc here: 7.8 s against 14 s for a typical file). Written into the light
    include dir once per torch install; returns the name to include."""
    import torch

    src = Path(torch.__file__).parent / "include" / "ATen" / "ops" / f"{op}.h"
    body = [line for line in src.read_text().splitlines() if not line.lstrip().startswith(("#include", "#pragma once"))]
    text = "\n".join([f"#pragma once\n// kernel-gym: {src.name} of torch {torch.__version__} without its includes",
                      "#include <ATen/core/Tensor.h>", f"#include <ATen/ops/{op}_ops.h>", *body]) + "\n"
    name = f"kernel_gym_ops_{op}_{hashlib.sha256(text.encode()).hexdigest()[:10]}.h"
    _write_once(lite_include_dir() / name, text)
    return name


def lite_header_text(headers: tuple[str, ...]) -> str:
    return ("#pragma once\n// kernel-gym: the parts of <torch/extension.h> this CUDA file uses.\n"
            + "".join(f"#include <{h}>\n" for h in headers) + _STREAM_ALIASES + torch_aliases())


def bind_choice(cpp_source: str) -> str:
    """"lite" when the C++ sources of load_inline's main.cpp use only tensor-level names (typically they only
    declare the CUDA file's functions), else "stock" (torch/extension.h, precompiled)."""
    if _USING.search(cpp_source) or not set(_NAMES.findall(cpp_source)) <= LITE_NAMES - {"cuda"}:
        return "stock"
    return "lite"


class _PrefixSwap(list):
    """Sources for load_inline whose implicit prefix lines are swapped: load_inline inserts
    `#include <torch/types.h>` before every CUDA file (all of ATen/ATen.h: most of the CUDA file's compile time) and
    `#include <torch/extension.h>` before main.cpp, into the list it is given. A line in `swaps` is replaced by its
    value (or dropped when the value is None); the other prefixes (<cuda.h>, <cuda_runtime.h>) keep their place."""

    def __init__(self, items: list[str], swaps: dict[str, str | None]):
        super().__init__(items)
        self.swaps = swaps
        self.skipped = 0

    def insert(self, index, item):  # noqa: ANN001 - list's signature
        key = item.strip() if isinstance(item, str) else item
        if key in self.swaps:
            if self.swaps[key] is None:
                self.skipped += 1
                return
            item = self.swaps[key]
        super().insert(index - self.skipped, item)


def _write_once(path: Path, text: str) -> Path:
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def lite_include_dir() -> Path:
    d = _scratch() / "fast_build" / "include"
    d.mkdir(parents=True, exist_ok=True)
    return d


def lite_header(headers: tuple[str, ...]) -> str:
    """The file name (in lite_include_dir()) of the light header with these includes, written if missing."""
    text = lite_header_text(headers)
    name = f"{LITE_PREFIX}_{hashlib.sha256(text.encode()).hexdigest()[:12]}.h"
    _write_once(lite_include_dir() / name, text)
    return name


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    return [v] if isinstance(v, str) else list(v)


def _pch_flags(extra_cflags: list[str], extra_include_paths: list[str]) -> tuple[str, list[str]]:
    import torch
    from torch.utils.cpp_extension import get_cxx_compiler

    include = Path(torch.__file__).parent / "include"
    return get_cxx_compiler(), [f"-I{include}", f"-I{sysconfig.get_path('include')}",
                                f"-I{include / 'torch/csrc/api/include'}", *[f"-I{p}" for p in extra_include_paths],
                                *extra_cflags, "-DTORCH_API_INCLUDE_EXTENSION_H", "-std=c++20", "-fPIC"]


def pch_key(extra_cflags: list[str], extra_include_paths: list[str], header: str = "stock") -> str:
    """The precompiled header's key: the compiler, every flag, torch's version and the header's text."""
    import torch

    compiler, flags = _pch_flags(extra_cflags, extra_include_paths)
    text = bind_text() if header == "lite" else ""
    return hashlib.sha256(repr((compiler, flags, torch.__version__, text)).encode()).hexdigest()[:20]


def _pch_texts(header: str) -> dict[str, str]:
    """The text files of a PCH folder (relative name: content), as this module writes them."""
    return {BIND_HEADER: bind_text()} if header == "lite" else {"torch/extension.h": _FORWARD_TEXT}


def _pch_file(header: str) -> str:
    return f"{BIND_HEADER}.gch" if header == "lite" else "torch/extension.h.gch"


def cached_pch(key: str, header: str) -> Path | None:
    """The cache's PCH folder for `key`, if it holds the PCH and its text files are exactly this module's."""
    folder = _root() / "pch" / key
    try:
        if not (folder / _pch_file(header)).is_file():
            return None
        if any((folder / name).read_text() != text for name, text in _pch_texts(header).items()):
            return None
    except (OSError, UnicodeDecodeError):
        return None
    return folder


def pch_dir(extra_cflags: list[str], extra_include_paths: list[str], header: str = "stock") -> Path | None:
    """The directory holding the precompiled header for main.cpp built with these flags (built now if missing):
    `torch/extension.h.gch` for "stock", `kernel_gym_bind_lite.h` and its `.gch` for "lite". None when
    precompiling fails (the build then simply parses the header). With `SCRATCH` set, a PCH the cache lacks is
    built under SCRATCH (for the judge to publish)."""
    import torch

    compiler, flags = _pch_flags(extra_cflags, extra_include_paths)
    key = pch_key(extra_cflags, extra_include_paths, header)
    if SCRATCH is not None:
        cached = cached_pch(key, header)
        if cached is not None:
            return cached
    out_dir = _scratch() / "pch" / key
    include = Path(torch.__file__).parent / "include"
    for name, text in _pch_texts(header).items():
        # (stock: g++ takes a .gch only for a file's first include; a second `#include <torch/extension.h>` —
        # load_inline puts one before the solution's own — looks for the header beside it: the forwarder sends it on)
        _write_once(out_dir / name, text)
    source = out_dir / BIND_HEADER if header == "lite" else include / "torch" / "extension.h"
    gch = out_dir / _pch_file(header)
    if gch.exists():
        return out_dir
    gch.parent.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker builds, the others wait for it
        if gch.exists():
            return out_dir
        tmp = gch.with_suffix(f".{os.getpid()}.tmp")
        cmd = [compiler, "-x", "c++-header", str(source), "-o", str(tmp), *flags]
        t0 = time.perf_counter()
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            (out_dir / "error.log").write_text(shlex.join(cmd) + "\n" + run.stderr[-4000:])
            tmp.unlink(missing_ok=True)
            return None
        os.replace(tmp, gch)
        (out_dir / "built.txt").write_text(f"{time.perf_counter() - t0:.1f} s\n{shlex.join(cmd)}\n")
    return out_dir


def pch_keys(params: dict[str, Any]) -> dict[str, str]:
    """{key: header} of the PCHs a fast build of `params` (load_inline's arguments) may make: what the judge
    publishes from a build process's scratch, and nothing else."""
    extra_cflags, paths = _as_list(params.get("extra_cflags")), _as_list(params.get("extra_include_paths"))
    return {pch_key(extra_cflags, paths, header): header for header in ("stock", "lite")}


def publish_pch(scratch: Path, params: dict[str, Any]) -> list[str]:
    """Move the PCH folders a build process made under `scratch` into the cache (keys of `params` only, each with its
    PCH and this module's text files, none the cache has already); returns the keys published. The caller runs it
    after the build process ended."""
    published = []
    for key, header in pch_keys(params).items():
        made, final = scratch / "pch" / key, _root() / "pch" / key
        if not (made / _pch_file(header)).is_file() or cached_pch(key, header) is not None:
            continue
        try:
            if any((made / name).read_text() != text for name, text in _pch_texts(header).items()):
                continue
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.exists():  # an older folder without a valid PCH
                import shutil

                shutil.rmtree(final, ignore_errors=True)
            from kernel_gym.sandbox import isolation

            isolation.seal(made)  # root's and read-only, before it is shared
            os.rename(made, final)
            published.append(key)
        except (OSError, UnicodeDecodeError):
            continue
    return published


_MISSING = re.compile(r'no operator "|has no member|is undefined|no instance of (?:overloaded )?function|'
                      r"incomplete type|is not a member of|was not declared|does not name a type|no matching function")


def pch_failed(build_error: str, changes: dict[str, str]) -> bool:
    """Whether a failed fast build's error is about the precompiled header itself (a line naming a file of its
    folder with an error), not the sources: then the stock build decides."""
    key = changes.get("pch")
    return bool(key) and any(f"pch/{key}/" in line and "error" in line.split(f"pch/{key}/")[0]
                             for line in build_error.splitlines())


def missing_declaration(build_error: str) -> bool:
    """Whether a failed build's errors say a declaration was missing (which a heavier header may supply), rather
    than, say, a syntax error that every header fails on the same way (then the retry is skipped)."""
    return bool(_MISSING.search(build_error))


def fast_params(params: dict[str, Any], cuda_header: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """load_inline keyword arguments for the fast build, and what was changed (for logs and benchmarks).

    `changes` holds "cuda_header" ("lite" or "types") and "cpp_header" ("lite") when a header was swapped (a failed
    build must then be retried: "types" after "lite", then the stock way), and "pch" (the precompiled header's
    key) when one is used. `cuda_header` forces the CUDA file's header choice ("types" for the retry)."""
    params = dict(params)
    changes: dict[str, str] = {}
    cuda_src = _text(params.get("cuda_sources"))
    choice = header_choice(cuda_src) if cuda_src else "stock"
    if cuda_header is not None and choice != "stock":
        choice = cuda_header
    if choice != "stock":
        header = f"#include <{lite_header(lite_headers(cuda_src))}>" if choice == "lite" else "#include <torch/types.h>"
        swapped = _EXTENSION_INCLUDE.sub(header, cuda_src, count=1)
        if choice == "lite":
            params["cuda_sources"] = _PrefixSwap([swapped], {"#include <torch/types.h>": None})
            params["extra_cuda_cflags"] = [*_as_list(params.get("extra_cuda_cflags")), f"-I{lite_include_dir()}"]
        else:
            params["cuda_sources"] = swapped
        changes["cuda_header"] = choice
    extra_cflags = _as_list(params.get("extra_cflags"))
    cpp_src = _text(params.get("cpp_sources"))
    # the light binding header serves C++ sources that declare the CUDA file's functions; a C++-only extension does
    # its work in main.cpp: the stock header, precompiled
    bind = "lite" if params.get("functions") is not None and cuda_src and bind_choice(cpp_src) == "lite" else "stock"
    pch = pch_dir(extra_cflags, _as_list(params.get("extra_include_paths")), bind)
    if bind == "lite" and pch is not None:
        params["cpp_sources"] = _PrefixSwap(_as_list(params.get("cpp_sources")),
                                            {"#include <torch/extension.h>": f"#include <{BIND_HEADER}>"})
        changes["cpp_header"] = "lite"
    if pch is not None:
        params["extra_cflags"] = [f"-I{pch}", *extra_cflags]  # first on the path: g++ finds the .gch there
        changes["pch"] = pch.name
    params.pop("use_pch", None)  # torch's own PCH: one per install, rebuilt per flag set; ours replaces it
    return params, changes
