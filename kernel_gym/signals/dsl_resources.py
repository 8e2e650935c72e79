"""Registers, shared memory, spills and block size of CuTe DSL and TileLang kernels, from the cubins their own
compilers made (read with `cuobjdump`, as a CUDA solution's are; no GPU needed).

- CuTe DSL (nvidia-cutlass-dsl 4.8.1): a compiled function (`cute.compile`'s result or a called `@cute.jit`
  function's, TVM-FFI or not) keeps its lowered host module, `ir_module`. The device code is in it as a global
  `<module>_binary` (a fatbin with the cubin for CUTE_DSL_ARCH or the GPU it was compiled on); `__cubin__` is None
  unless CUTE_DSL_KEEP=cubin, which also turns CuTe DSL's cache off, so the runner does not set it. The launch's
  dynamic shared memory (what the kernel's `SmemAllocator` took, or the launch's `smem=`) is the constant the host
  code stores in the `cudaLaunchConfig_t` it hands `cudaLaunchKernelEx`.
- TileLang (0.1.15): a `JITKernel` keeps the CUDA C++ it was built from (`kernel_source`); TileLang's own nvcc
  step (`tilelang_callback_cuda_compile`: its flags, its include paths, its binary cache) gives the cubin again — a
  cache hit in the runner, where the kernel was just built; nvcc (~4 s for an elementwise kernel, ~10 s for a GEMM)
  elsewhere. Block size and dynamic shared memory (`dyn_shared_memory_buf`) are attributes of its device module.

The block size comes from the cubin too: CuTe DSL compiles each kernel for the block it launches with
(EIATTR_REQNTID), TileLang writes `__launch_bounds__` (EIATTR_MAX_THREADS). A kernel whose dynamic shared memory
could not be read gets no block size, so it has no occupancy rather than a wrong one.
"""

from __future__ import annotations

import logging
import re
import tempfile
from pathlib import Path
from typing import Any

from kernel_gym.signals.resources import KernelResources, _run, binary_resources, find_tool

log = logging.getLogger(__name__)

_FATBIN, _ELF = b"\x50\xed\x55\xba", b"\x7fELF"
_INFO = re.compile(r"^\.nv\.info\.([\w$.]+)\s*$", re.M)
_NTID = re.compile(r"Attribute:\s*EIATTR_(?:REQNTID|MAX_THREADS)\s*\n\s*Format:[^\n]*\n\s*Value:\s*([0-9a-fx ]+)")


def parse_block_sizes(elf_dump: str) -> dict[str, int]:
    """Threads per block of each kernel of a `cuobjdump -elf` dump: its required (REQNTID) or maximum
    (MAX_THREADS, `__launch_bounds__`) block, x * y * z."""
    found = {}
    heads = list(_INFO.finditer(elf_dump))
    for head, nxt in zip(heads, [*heads[1:], None]):
        body = elf_dump[head.end():nxt.start() if nxt else len(elf_dump)]
        if m := _NTID.search(body):
            dims = [int(v, 16) for v in m.group(1).split()]
            total = 1
            for d in dims:
                total *= d
            found[head.group(1)] = total
    return found


def cubin_kernels(data: bytes) -> list[KernelResources]:
    """Registers, static shared memory, local bytes and block size of every kernel in a cubin or fatbin."""
    with tempfile.TemporaryDirectory(prefix="kg_dsl_") as tmp:
        path = Path(tmp) / ("kernels.fatbin" if data.startswith(_FATBIN) else "kernels.cubin")
        path.write_bytes(data)
        found = binary_resources(path)
        cuobjdump = find_tool("cuobjdump")
        run = _run([cuobjdump, "-elf", str(path)]) if cuobjdump and found else None
    threads = parse_block_sizes(run.stdout) if run else {}
    return [KernelResources(k.name, k.regs, k.smem, k.spill_bytes, threads=threads.get(k.name)) for k in found]


def _with_launch(found: list[KernelResources], dynamic: dict[str, int | None],
                 threads: dict[str, int] | None = None) -> list[KernelResources]:
    """`found` with the dynamic shared memory of its launches; unknown dynamic shared memory: no block size."""
    out = []
    for k in found:
        smem = dynamic.get(k.name)
        block = (threads or {}).get(k.name, k.threads) if smem is not None else None
        out.append(KernelResources(k.name, k.regs, k.smem, k.spill_bytes, threads=block, dynamic_smem=smem or 0))
    return out


# ---- CuTe DSL ----------------------------------------------------------------------------------------------------
def cute_binaries(ir_module: Any) -> list[bytes]:
    """The device binaries (fatbins or cubins) embedded in a CuTe DSL compiled function's lowered host module."""
    found = []
    for op in ir_module.body.operations:
        op = op.operation
        if op.name != "llvm.mlir.global" or not str(op.attributes["sym_name"]).strip('"').endswith("_binary"):
            continue
        value = op.attributes["value"] if "value" in op.attributes else None
        data = bytes(getattr(value, "value_bytes", b"") or b"")
        if data.startswith((_FATBIN, _ELF)):
            found.append(data)
    return found


_CONFIG = r"!llvm\.struct<\(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32\)>"  # cudaLaunchConfig_t
_SMEM_FIELD = re.compile(r"(%\w+) = llvm\.getelementptr %\w+\[0, 2\] : \(!llvm\.ptr\) -> !llvm\.ptr, " + _CONFIG)
_STORE_I64 = re.compile(r"llvm\.store (%\w+), (%\w+) : i64, !llvm\.ptr")
_CONST_I64 = re.compile(r"(%\w+) = llvm\.mlir\.constant\((-?\d+) : i64\) : i64")
_KERNEL_REF = re.compile(r"llvm\.mlir\.addressof @(\w+) ")


def launch_dynamic_smem(host_functions: list[str], kernels: list[str]) -> dict[str, int | None]:
    """Dynamic shared memory of each launch of `kernels` in the lowered host functions (their text): the constant
    stored into a launch configuration's `sharedMem`, paired in order with the kernels a function launches (the
    largest when a kernel is launched more than once); None where it is not a constant or the pairing is unclear."""
    found: dict[str, int | None] = {}
    for text in host_functions:
        if "@_cudaLaunchKernelEx(" not in text:
            continue
        consts = dict(_CONST_I64.findall(text))
        fields = set(_SMEM_FIELD.findall(text))
        sizes = [consts.get(value) for value, target in _STORE_I64.findall(text) if target in fields]
        launched = [next((k for k in kernels if ref == k or ref.endswith("_" + k)), None)
                    for ref in _KERNEL_REF.findall(text)]
        launched = [k for k in launched if k is not None]
        for i, kernel in enumerate(launched):
            size = sizes[i] if len(sizes) == len(launched) else None
            if size is None or (kernel in found and found[kernel] is None):
                found[kernel] = None
            else:
                found[kernel] = max(int(size), found.get(kernel) or 0)
    return found


def cute_kernels(compiled: Any) -> list[KernelResources]:
    """Resources of the kernels of one CuTe DSL compiled function (see the module's docstring)."""
    module = getattr(compiled, "ir_module", None)
    if module is None:
        return []
    found = [k for data in cute_binaries(module) for k in cubin_kernels(data)]
    if not found:
        return []
    host = [str(op) for op in module.body.operations if op.operation.name == "llvm.func"]
    return _with_launch(found, launch_dynamic_smem(host, [k.name for k in found]))


# ---- TileLang ----------------------------------------------------------------------------------------------------
def tilelang_cubin(kernel: Any) -> bytes:
    """The cubin of a TileLang CUDA kernel, as TileLang's nvcc step builds it (from its binary cache when built)."""
    from tilelang.cuda.backend import tilelang_callback_cuda_compile
    from tilelang.transform import PassConfigKey

    configs = dict(kernel.pass_configs or {})
    if kernel.compile_flags:  # as JITKernel hands them to the build
        key = PassConfigKey.TL_DEVICE_COMPILE_FLAGS
        before = configs.get(key) or []
        configs[key] = [*([before] if isinstance(before, str) else before), *kernel.compile_flags]
    return bytes(tilelang_callback_cuda_compile(kernel.kernel_source, kernel.target, configs))


def tilelang_launches(kernel: Any) -> tuple[dict[str, int], dict[str, int | None]]:
    """Threads per block and dynamic shared memory of each kernel of a TileLang kernel's device module; ({}, {})
    when it has none (a kernel loaded from TileLang's disk cache keeps only its sources)."""
    device_mod = getattr(getattr(kernel, "artifact", None), "device_mod", None) or getattr(
        getattr(kernel, "adapter", None), "device_mod", None)
    threads, dynamic = {}, {}
    for _, func in (device_mod.functions.items() if device_mod is not None else []):
        attrs = func.attrs or {}
        name, extent = attrs.get("global_symbol"), attrs.get("thread_extent") or {}
        if name is None:
            continue
        dims = [int(extent.get(f"threadIdx.{axis}", 1)) for axis in "xyz"]
        threads[str(name)] = dims[0] * dims[1] * dims[2]
        dynamic[str(name)] = int(attrs.get("dyn_shared_memory_buf", 0) or 0)
    return threads, dynamic


def tilelang_kernels(kernel: Any) -> list[KernelResources]:
    """Resources of the kernels of one TileLang `JITKernel` compiled for CUDA (see the module's docstring)."""
    target = getattr(kernel, "target", None)
    if getattr(getattr(target, "kind", None), "name", None) != "cuda" or "__global__" not in kernel.kernel_source:
        return []  # another target, or another execution backend's source (TileLang's cutedsl backend)
    found = cubin_kernels(tilelang_cubin(kernel))
    threads, dynamic = tilelang_launches(kernel)
    if not dynamic and "extern __shared__" not in kernel.kernel_source:
        dynamic = {k.name: 0 for k in found}  # no dynamic shared memory at all: the cubin's block size holds
    return _with_launch(found, dynamic, threads)


def dsl_kernels(objects: list[Any]) -> list[KernelResources]:
    """Resources of the kernels of CuTe DSL compiled functions and TileLang kernels (one that fails is logged and
    left out)."""
    out = []
    for obj in objects:
        try:
            if hasattr(obj, "ir_module") and hasattr(obj, "kernel_info"):
                out.extend(cute_kernels(obj))
            elif hasattr(obj, "get_kernel_source") and hasattr(obj, "adapter"):
                out.extend(tilelang_kernels(obj))
        except Exception as e:  # noqa: BLE001 - a signal we cannot compute is left out, never a verdict
            log.warning("signals: no resources for %s: %s", type(obj).__name__, e)
    return out
