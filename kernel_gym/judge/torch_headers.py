"""Which of torch's C++ headers a `load_inline` source needs, and the text of the light ones (kernel_gym.judge.fast_build
swaps them in).

A CUDA source that includes `torch/extension.h` but names only tensors, factories, dtypes/options, dispatch macros,
`TORCH_CHECK` and CUDA streams/guards gets a light header of exactly those ATen/c10 headers ("lite"); one that uses
more, `torch/types.h` ("types"); pybind11 users keep the stock header. The C++ sources of load_inline's main.cpp get
the light binding header when they only declare functions on tensors. Decided from the `torch::`/`at::`/`c10::` names
a source uses.
"""

from __future__ import annotations

import re
from pathlib import Path

LITE_PREFIX = "kernel_gym_torch_lite"
BIND_HEADER = "kernel_gym_bind_lite.h"
_BIND_TEXT = """#pragma once
// kernel-gym: what load_inline's generated main.cpp needs when its C++ sources only declare functions on tensors:
// pybind11 (with its STL casters), torch's tensor caster, and torch::wrap_pybind_function.
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>
#include <ATen/core/Tensor.h>
"""

EXTENSION_INCLUDE = re.compile(r'#\s*include\s*[<"]torch/extension\.h[>"]')
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
BASE_HEADERS = ("ATen/core/Tensor.h", "ATen/Dispatch.h", "c10/cuda/CUDAStream.h", "c10/cuda/CUDAException.h")
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


def header_choice(cuda_source: str) -> str:
    """"lite", "types" or "stock": the lightest header that gives this CUDA source what it uses."""
    if not EXTENSION_INCLUDE.search(cuda_source):
        return "stock"  # it includes what it wants itself
    if _PYBIND.search(cuda_source):
        return "stock"
    if _USING.search(cuda_source):
        return "types"  # unqualified torch names: which headers they need cannot be read off the source
    known_cuda = _STREAM_NAMES | _GUARD_NAMES | _CONTEXT_NAMES
    if set(_NAMES.findall(cuda_source)) <= LITE_NAMES and set(_CUDA_NAMES.findall(cuda_source)) <= known_cuda:
        return "lite"
    return "types"


def lite_needs(cuda_source: str) -> tuple[list[str], list[str]]:
    """What the light header for this source adds to `BASE_HEADERS`: the factory ops it names (each one's light
    `ATen/ops` stand-in), and the CUDA guard and context headers, only when it uses them."""
    names = set(_NAMES.findall(cuda_source))
    cuda_names = set(_CUDA_NAMES.findall(cuda_source)) | names
    extra = []
    if cuda_names & _GUARD_NAMES:
        extra.append("c10/cuda/CUDAGuard.h")
    if cuda_names & _CONTEXT_NAMES or re.search(r"\bAT_CUDA_CHECK\b|CUDAContext", cuda_source):
        extra += ["ATen/cuda/CUDAContextLight.h", "ATen/cuda/Exceptions.h"]
    return sorted(names & _FACTORIES), extra


def lite_header_text(headers: tuple[str, ...]) -> str:
    return ("#pragma once\n// kernel-gym: the parts of <torch/extension.h> this CUDA file uses.\n"
            + "".join(f"#include <{h}>\n" for h in headers) + _STREAM_ALIASES + torch_aliases())


def bind_choice(cpp_source: str) -> str:
    """"lite" when the C++ sources of load_inline's main.cpp use only tensor-level names (typically they only
    declare the CUDA file's functions), else "stock" (torch/extension.h, precompiled)."""
    if _USING.search(cpp_source) or not set(_NAMES.findall(cpp_source)) <= LITE_NAMES - {"cuda"}:
        return "stock"
    return "lite"
