"""NVRTC: CUDA C++ source to a cubin, in memory, in well under a second (the compile side of `kernel_gym.cuda_raw`,
and of the judge's NVRTC compile check).

NVRTC has no C/C++ standard headers: small in-memory stand-ins for <cstdint>, <cfloat>, <climits> and <cmath>'s
constants are pre-included (`HEADERS`, `PRELUDE_OPTION`), and the CUDA headers (cuda_fp16.h, cuda_bf16.h ...) come
from the nvidia wheel or CUDA_HOME.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path


class CompileError(RuntimeError):
    """NVRTC rejected the source; `log` holds its messages."""

    def __init__(self, log: str):
        super().__init__("NVRTC failed to compile the CUDA source:\n" + log)
        self.log = log



def unwrap(result: tuple, what: str) -> tuple:
    """A cuda-python call's results after its error code (NVRTC's and the driver's alike); RuntimeError when it
    failed."""
    err = result[0]
    if int(err) != 0:
        raise RuntimeError(f"{what} failed: {getattr(err, 'name', err)}")
    return result[1:]


@functools.cache
def _include_dirs() -> list[str]:
    """CUDA headers for NVRTC (cuda_fp16.h, cuda_bf16.h ...): the nvidia wheel's, else CUDA_HOME's."""
    dirs = []
    try:
        import nvidia

        for root in getattr(nvidia, "__path__", []):
            dirs += [str(p) for p in sorted(Path(root).glob("cu*/include")) if (p / "cuda_fp16.h").exists()]
    except ImportError:
        pass
    from kernel_gym.harness import cutlass

    dirs += cutlass.include_dirs()  # CUTLASS/CuTe headers, when the package is installed
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    if (Path(home) / "include" / "cuda_fp16.h").exists():
        dirs.append(str(Path(home) / "include"))
    return dirs[:2]


# NVRTC has no C/C++ standard headers. Kernels written for nvcc routinely use fixed-width ints, INFINITY and
# FLT_MAX, so these small in-memory headers stand in for <cstdint>, <cfloat>, <climits> and <cmath>'s constants,
# and the prelude (pre-included) makes the names available without any #include.
_STDINT = """#pragma once
typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long long uint64_t; typedef long long intptr_t; typedef unsigned long long uintptr_t;
"""
_FLOAT = """#pragma once
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define DBL_MAX 1.7976931348623158e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-016
"""
_LIMITS = """#pragma once
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX 0xffffffffU
#define LLONG_MAX 9223372036854775807LL
#define LLONG_MIN (-LLONG_MAX - 1LL)
#define ULLONG_MAX 0xffffffffffffffffULL
"""
_MATH = """#pragma once
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.41421356237309504880
#endif
#ifndef M_E
#define M_E 2.71828182845904523536
#endif
"""
_PRELUDE = "#pragma once\n#include <cstdint>\n#include <cfloat>\n#include <climits>\n#include <cmath>\n"
HEADERS: dict[str, str] = {"cstdint": _STDINT, "stdint.h": _STDINT, "cfloat": _FLOAT, "float.h": _FLOAT,
                           "climits": _LIMITS, "limits.h": _LIMITS, "cmath": _MATH, "math.h": _MATH,
                           "kernel_gym_prelude.h": _PRELUDE}
PRELUDE_OPTION = "--pre-include=kernel_gym_prelude.h"


@functools.cache
def nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    return ".".join(map(str, unwrap(nvrtc.nvrtcVersion(), "nvrtcVersion")))


def cpu_arch() -> str:
    """The architecture NVRTC compiles for where no GPU is used (the CPU backend, and the judge's compile check)."""
    return os.environ.get("KERNEL_GYM_CUDA_ARCH", "sm_90")


def nvrtc_options(arch: str, extra: Sequence[str] = ()) -> list[str]:
    """Every NVRTC compile's flags: the target, C++17, our prelude and the CUDA headers, then the caller's."""
    return [f"--gpu-architecture={arch}", "-std=c++17", PRELUDE_OPTION, *[f"-I{d}" for d in _include_dirs()], *extra]


def compile_program(source: str, names: Sequence[str], options: Sequence[str]) -> tuple[bytes, dict[str, str], str]:
    """(cubin, name -> lowered name, log). Raises CompileError with NVRTC's log."""
    from cuda.bindings import nvrtc

    names_h = list(HEADERS)
    (prog,) = unwrap(nvrtc.nvrtcCreateProgram(source.encode(), b"solution.cu", len(names_h),
                                              [HEADERS[h].encode() for h in names_h], [h.encode() for h in names_h]),
                     "nvrtcCreateProgram")
    try:
        for n in names:
            unwrap(nvrtc.nvrtcAddNameExpression(prog, n.encode()), "nvrtcAddNameExpression")
        opts = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        (size,) = unwrap(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        log = b" " * size
        unwrap(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
        log_text = log.rstrip(b"\x00 ").decode(errors="replace").replace("solution.cu", "cuda_source")
        if int(err) != 0:
            raise CompileError(log_text or getattr(err, "name", str(err)))
        (size,) = unwrap(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * size
        unwrap(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        lowered = {n: unwrap(nvrtc.nvrtcGetLoweredName(prog, n.encode()), "nvrtcGetLoweredName")[0].decode()
                   for n in names}
        return cubin, lowered, log_text
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
