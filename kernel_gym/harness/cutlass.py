"""CUTLASS and CuTe C++ headers for CUDA sources that include them (`#include <cute/tensor.hpp>`,
`<cutlass/gemm/...>`): the include folders of the installed `nvidia-cutlass` package (`pip install
"kernel-gym[cutlass]"`; nothing is downloaded), added to a `load_inline` build, the CPU backend's nvcc check and
NVRTC (`kernel_gym.cuda_raw`) when a source asks for them, with the flag CUTLASS needs (`--expt-relaxed-constexpr`).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from importlib import metadata
from pathlib import Path

USES = re.compile(r"#\s*include\s*[<\"](?:cutlass|cute)/")
NVCC_FLAGS = ("--expt-relaxed-constexpr",)


def uses(*sources: str | None) -> bool:
    """Whether any of these sources includes a CUTLASS or CuTe header."""
    return any(s and USES.search(s) for s in sources)


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """The installed package's include folders (CUTLASS and CuTe; CUTLASS's tools/util), () when not installed."""
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.origin:
        return ()
    source = Path(spec.origin).parent / "source"
    return tuple(str(d) for d in (source / "include", source / "tools" / "util" / "include") if d.is_dir())


@functools.cache
def version() -> str | None:
    try:
        return metadata.version("nvidia-cutlass")
    except metadata.PackageNotFoundError:
        return None
