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

Which header a source needs and the light headers' text: `torch_headers`; the PCH cache: `pch_cache`.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from kernel_gym.judge.pch_cache import (
    as_list,
    build_pch,
    cached_pch,
    pch_key,
    write_once,
)
from kernel_gym.judge.torch_headers import (
    BASE_HEADERS,
    BIND_HEADER,
    EXTENSION_INCLUDE,
    LITE_PREFIX,
    bind_choice,
    header_choice,
    lite_header_text,
    lite_needs,
)
from kernel_gym.paths import cache_dir


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


def lite_headers(cuda_source: str, folder: Path | None = None) -> tuple[str, ...]:
    """The ATen/c10 headers of the light header for this source: the base set, the factory ops it names, and the
    CUDA guard and context headers only when it uses them (the ops' light headers written into `folder`, default
    `lite_include_dir()`)."""
    ops, extra = lite_needs(cuda_source)
    return (*BASE_HEADERS, *(ops_header(n, folder) for n in ops), *extra)


def ops_header(op: str, folder: Path | None = None) -> str:
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
    write_once((folder or lite_include_dir()) / name, text)
    return name


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


def lite_include_dir() -> Path:
    d = _scratch() / "fast_build" / "include"
    d.mkdir(parents=True, exist_ok=True)
    return d


def lite_header(headers: tuple[str, ...], folder: Path | None = None) -> str:
    """The file name (in `folder`, default lite_include_dir()) of the light header with these includes, written if
    missing."""
    text = lite_header_text(headers)
    name = f"{LITE_PREFIX}_{hashlib.sha256(text.encode()).hexdigest()[:12]}.h"
    write_once((folder or lite_include_dir()) / name, text)
    return name


def lighter_source(cuda_source: str, folder: Path) -> tuple[str, str] | None:
    """For a compile check of one CUDA file (harness/cuda.py, `nvcc_check`): the source with its
    `#include <torch/extension.h>` swapped for the lightest header that suffices (the light header, written with its
    ops' headers into `folder`, or torch/types.h), and the choice; None when only the stock header serves, or fast
    builds are off. As in a build, a failed light compile is no verdict: the stock source decides."""
    if not enabled():
        return None
    choice = header_choice(cuda_source)
    if choice == "stock":
        return None
    header = f"<{lite_header(lite_headers(cuda_source, folder), folder)}>" if choice == "lite" else "<torch/types.h>"
    return EXTENSION_INCLUDE.sub(f"#include {header}", cuda_source, count=1), choice


def pch_dir(extra_cflags: list[str], extra_include_paths: list[str], header: str = "stock") -> Path | None:
    """The directory holding the precompiled header for main.cpp built with these flags (built now if missing):
    `torch/extension.h.gch` for "stock", `kernel_gym_bind_lite.h` and its `.gch` for "lite". None when
    precompiling fails (the build then simply parses the header). With `SCRATCH` set, a PCH the cache lacks is
    built under SCRATCH (for the judge to publish)."""
    key = pch_key(extra_cflags, extra_include_paths, header)
    if SCRATCH is not None:
        cached = cached_pch(key, header)
        if cached is not None:
            return cached
    return build_pch(_scratch() / "pch" / key, extra_cflags, extra_include_paths, header)


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
        swapped = EXTENSION_INCLUDE.sub(header, cuda_src, count=1)
        if choice == "lite":
            params["cuda_sources"] = _PrefixSwap([swapped], {"#include <torch/types.h>": None})
            params["extra_cuda_cflags"] = [*as_list(params.get("extra_cuda_cflags")), f"-I{lite_include_dir()}"]
        else:
            params["cuda_sources"] = swapped
        changes["cuda_header"] = choice
    extra_cflags = as_list(params.get("extra_cflags"))
    cpp_src = _text(params.get("cpp_sources"))
    # the light binding header serves C++ sources that declare the CUDA file's functions; a C++-only extension does
    # its work in main.cpp: the stock header, precompiled
    bind = "lite" if params.get("functions") is not None and cuda_src and bind_choice(cpp_src) == "lite" else "stock"
    pch = pch_dir(extra_cflags, as_list(params.get("extra_include_paths")), bind)
    if bind == "lite" and pch is not None:
        params["cpp_sources"] = _PrefixSwap(as_list(params.get("cpp_sources")),
                                            {"#include <torch/extension.h>": f"#include <{BIND_HEADER}>"})
        changes["cpp_header"] = "lite"
    if pch is not None:
        params["extra_cflags"] = [f"-I{pch}", *extra_cflags]  # first on the path: g++ finds the .gch there
        changes["pch"] = pch.name
    params.pop("use_pch", None)  # torch's own PCH: one per install, rebuilt per flag set; ours replaces it
    return params, changes
