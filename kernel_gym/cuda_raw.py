"""Raw CUDA kernels launched from Python: NVRTC compiles `__global__` functions to a cubin in well under a second,
the CUDA driver loads and launches them on PyTorch's current stream. No torch C++ headers, no extension build.

This is the solution format of `backend="cuda_raw"`::

    from kernel_gym import cuda_raw

    SOURCE = r'''
    extern "C" __global__ void relu(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
    }
    '''
    kernels = cuda_raw.compile(SOURCE)

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            y = torch.empty_like(x)
            n = x.numel()
            kernels.relu(x, y, n, grid=(n + 255) // 256, block=256)
            return y

Arguments are converted by the kernel's own signature (read from the source): a pointer parameter takes a CUDA
tensor (its dtype must match the pointee, `float*` ↔ float32, `__half*` ↔ float16 ...) or a raw address; a scalar
parameter takes a Python number, packed as the declared C type. `grid` and `block` are an int or a 1–3 tuple;
`shared_mem` is dynamic shared memory in bytes (above 48 KiB the function's limit is raised for you); the launch
goes to `torch.cuda.current_stream()` unless `stream=` is given.

Compiled cubins are cached by content (source, options, architecture, NVRTC version) under
`$KERNEL_GYM_CACHE/cuda_raw`, so a resubmitted kernel costs a file read (inside an evaluation runner: the job's own
folder; NVRTC takes ~0.05 s for a small kernel). Without a GPU, `compile` still runs NVRTC
(a real compile check for sm_90) and then raises `NoCudaDevice`. NVRTC itself (its options, the stand-in standard
headers): `kernel_gym.nvrtc`.

Inside an evaluation worker every launch is counted as the solution's own (and skipped during the ablation trial
that detects decoy kernels), exactly like Triton launches.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernel_gym.c_params import CParam as Param
from kernel_gym.c_params import kernel_signatures
from kernel_gym.harness import phases
from kernel_gym.nvrtc import CompileError, compile_program, cpu_arch, nvrtc_options, nvrtc_version, unwrap
from kernel_gym.paths import cache_dir

__all__ = ["compile", "RawModule", "RawKernel", "CompileError", "NoCudaDevice", "kernel_signatures"]



class NoCudaDevice(RuntimeError):
    """The source compiled, but there is no CUDA device to load it on (the CPU backend)."""

    def __init__(self, module: RawModule):
        super().__init__(f"the CUDA source compiled for {module.arch} (NVRTC), but there is no CUDA device to run it")
        self.module = module


# ---- the source's kernels and their parameters ------------------------------------------------------------------

# C scalar type -> (ctypes type). Pointers are packed as 64-bit addresses.
_SCALARS: dict[str, Any] = {
    "int": ctypes.c_int32, "int32_t": ctypes.c_int32, "unsigned": ctypes.c_uint32, "unsigned int": ctypes.c_uint32,
    "uint32_t": ctypes.c_uint32, "long": ctypes.c_int64, "long long": ctypes.c_int64, "int64_t": ctypes.c_int64,
    "long int": ctypes.c_int64, "unsigned long": ctypes.c_uint64, "unsigned long long": ctypes.c_uint64,
    "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_uint64, "ptrdiff_t": ctypes.c_int64, "short": ctypes.c_int16,
    "int16_t": ctypes.c_int16, "unsigned short": ctypes.c_uint16, "uint16_t": ctypes.c_uint16, "char": ctypes.c_int8,
    "int8_t": ctypes.c_int8, "unsigned char": ctypes.c_uint8, "uint8_t": ctypes.c_uint8, "bool": ctypes.c_bool,
    "float": ctypes.c_float, "double": ctypes.c_double,
}
# Pointee type -> torch dtype names it may point at (None: any dtype, e.g. void* or char*).
_POINTEES: dict[str, tuple[str, ...] | None] = {
    "float": ("float32",), "double": ("float64",), "__half": ("float16",), "half": ("float16",),
    "__nv_bfloat16": ("bfloat16",), "nv_bfloat16": ("bfloat16",), "int": ("int32",), "int32_t": ("int32",),
    "unsigned": ("int32", "uint32"), "unsigned int": ("int32", "uint32"), "uint32_t": ("int32", "uint32"),
    "long": ("int64",), "long long": ("int64",), "int64_t": ("int64",), "uint64_t": ("int64", "uint64"),
    "unsigned long long": ("int64", "uint64"), "short": ("int16",), "int16_t": ("int16",), "int8_t": ("int8",),
    "uint8_t": ("uint8", "bool"), "unsigned char": ("uint8", "bool"), "bool": ("bool",),
    "float2": ("float32",), "float4": ("float32",), "int4": ("int32",), "half2": ("float16",), "__half2": ("float16",),
    "void": None, "char": None,
}


# ---- the cubin cache ----------------------------------------------------------------------------------------------

# Where compiled cubins are kept: $KERNEL_GYM_CACHE/cuda_raw, shared by a machine's processes, unless set. A runner
# sets its job's own folder (no runner may write a cache another job reads: docs/anti-hacking.md).
CACHE_ROOT: Path | None = None


def _cache_root() -> Path:
    root = CACHE_ROOT or cache_dir("cuda_raw")
    root.mkdir(parents=True, exist_ok=True)
    return root


# ---- the device side -----------------------------------------------------------------------------------------------

# Where launches go: "cuda" loads and launches; "cpu" only compiles (a worker of the CPU backend sets this).
TARGET_DEVICE: str | None = None
COMPILED: list[RawModule] = []  # every module compiled in this process since the last reset (for signals)
_LOCK = threading.Lock()
_MEMO: dict[str, tuple[bytes, dict[str, str], str, Path]] = {}  # key -> (cubin, lowered names, log, path)


def _device_available() -> bool:
    if TARGET_DEVICE is not None:
        return TARGET_DEVICE == "cuda"
    import torch

    return torch.cuda.is_available()


def _arch() -> str:
    import torch

    if _device_available():
        major, minor = torch.cuda.get_device_capability()
        return f"sm_{major}{minor}"
    return cpu_arch()


def _ensure_context() -> None:
    """Make PyTorch's primary context current on this thread (the driver API needs one)."""
    import torch
    from cuda.bindings import driver

    torch.cuda.init()
    (ctx,) = unwrap(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(ctx) == 0:
        (dev,) = unwrap(driver.cuDeviceGet(torch.cuda.current_device()), "cuDeviceGet")
        (ctx,) = unwrap(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        unwrap(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


class RawModule:
    """A compiled source: its `__global__` functions as attributes (`module.relu(..., grid=, block=)`)."""

    def __init__(self, source: str, cubin: bytes, lowered: dict[str, str], signatures: dict[str, tuple[Param, ...]],
                 arch: str, log: str, cubin_path: Path | None, options: Sequence[str] = ()):
        self.source, self.cubin, self.arch, self.log, self.cubin_path = source, cubin, arch, log, cubin_path
        self.options = list(options)  # the caller's extra NVRTC flags
        self.signatures = signatures
        self._lowered = lowered
        self._handle = None
        self._kernels: dict[str, RawKernel] = {}
        self.launch_configs: dict[str, tuple[int, int]] = {}  # kernel -> (threads per block, dynamic smem) last used

    @property
    def kernel_names(self) -> list[str]:
        return list(self.signatures)

    def _load(self) -> Any:
        if self._handle is None:
            from cuda.bindings import driver

            _ensure_context()
            (self._handle,) = unwrap(driver.cuModuleLoadData(self.cubin), "cuModuleLoadData")
        return self._handle

    def get_function(self, name: str) -> RawKernel:
        if name not in self._kernels:
            if name not in self.signatures:
                raise AttributeError(f"the CUDA source defines no __global__ function {name!r} "
                                     f"(it defines: {', '.join(self.signatures) or 'none'})")
            from cuda.bindings import driver

            (fn,) = unwrap(driver.cuModuleGetFunction(self._load(), self._lowered[name].encode()),
                            f"cuModuleGetFunction({name})")
            self._kernels[name] = RawKernel(name, fn, self.signatures[name], self.launch_configs)
        return self._kernels[name]

    def __getattr__(self, name: str) -> RawKernel:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.get_function(name)

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.signatures]


def _dims(v: int | Sequence[int], what: str) -> tuple[int, int, int]:
    t = (v,) if isinstance(v, int) else tuple(int(x) for x in v)
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise ValueError(f"{what} must be a positive int or a tuple of 1-3 positive ints, got {v!r}")
    return (*t, 1, 1)[:3]


class RawKernel:
    """One `__global__` function. Call it with its arguments and `grid=`, `block=` (and `shared_mem=`, `stream=`)."""

    def __init__(self, name: str, handle: Any, params: tuple[Param, ...],
                 configs: dict[str, tuple[int, int]] | None = None):
        self.name, self.__name__, self._fn, self.params = name, name, handle, params
        self._configs = {} if configs is None else configs
        self._smem_limit = 48 * 1024

    def _pack(self, args: tuple[Any, ...]) -> list[Any]:
        import torch

        if len(args) != len(self.params):
            raise TypeError(f"{self.name} takes {len(self.params)} arguments ({', '.join(p.name for p in self.params)}), "
                            f"got {len(args)}")
        packed = []
        for p, a in zip(self.params, args):
            if p.pointer:
                if isinstance(a, torch.Tensor):
                    if a.device.type != "cuda":
                        raise TypeError(f"{self.name}: argument {p.name!r} is a {a.device.type} tensor; pass a CUDA tensor")
                    allowed = _POINTEES.get(p.ctype, None)
                    if allowed is not None and str(a.dtype).removeprefix("torch.") not in allowed:
                        raise TypeError(f"{self.name}: argument {p.name!r} is `{p.ctype}*` but the tensor is {a.dtype}")
                    packed.append(ctypes.c_uint64(a.data_ptr()))
                elif isinstance(a, int):
                    packed.append(ctypes.c_uint64(a))
                else:
                    raise TypeError(f"{self.name}: argument {p.name!r} is a pointer; pass a CUDA tensor, "
                                    f"got {type(a).__name__}")
            else:
                ctype = _SCALARS.get(p.ctype)
                if ctype is None:
                    raise TypeError(f"{self.name}: parameter {p.name!r} has type `{p.ctype}`, which cannot be passed "
                                    "from Python; use int/float/double scalars or pointers")
                if isinstance(a, torch.Tensor):
                    raise TypeError(f"{self.name}: argument {p.name!r} is a scalar `{p.ctype}`; pass a Python number "
                                    "(not a tensor)")
                packed.append(ctype(a))
        return packed

    def __call__(self, *args: Any, grid: int | Sequence[int], block: int | Sequence[int], shared_mem: int = 0,
                 stream: Any = None) -> None:
        import torch
        from cuda.bindings import driver

        from kernel_gym.harness.launches import STATE

        gx, gy, gz = _dims(grid, "grid")
        bx, by, bz = _dims(block, "block")
        packed = self._pack(args)
        STATE.names.add(self.name)
        if STATE.track_sizes:
            STATE.note_sizes(args, {})
        self._configs[self.name] = (bx * by * bz, int(shared_mem))
        if STATE.ablate:  # the decoy-kernel trial: the launch is skipped
            STATE.count += 1
            return
        if shared_mem > self._smem_limit:
            attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            unwrap(driver.cuFuncSetAttribute(self._fn, attr, int(shared_mem)), "cuFuncSetAttribute")
            self._smem_limit = shared_mem
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        elif isinstance(stream, torch.cuda.Stream):
            stream = stream.cuda_stream
        pointers = (ctypes.c_void_p * max(1, len(packed)))(*[ctypes.addressof(v) for v in packed])
        err = driver.cuLaunchKernel(self._fn, gx, gy, gz, bx, by, bz, int(shared_mem), int(stream),
                                    ctypes.addressof(pointers), 0)[0]
        if int(err) != 0:
            raise RuntimeError(f"launching {self.name} failed: {getattr(err, 'name', err)} "
                               f"(grid={(gx, gy, gz)}, block={(bx, by, bz)}, shared_mem={shared_mem})")
        STATE.count += 1

    def __repr__(self) -> str:
        return f"RawKernel({self.name}({', '.join(p.name for p in self.params)}))"


def compile(source: str, *, options: Sequence[str] = (), name: str = "solution") -> RawModule:  # noqa: A001
    """Compile CUDA source with NVRTC for this GPU; the `__global__` functions become callable attributes.

    `options` are extra NVRTC flags (e.g. `"--use_fast_math"`, `"-DBLOCK=256"`). C++ (mangled) kernel names work
    as well as `extern "C"`; templates do not. Raises `CompileError` with NVRTC's log on a compile error and
    `NoCudaDevice` (after a successful compile) where there is no GPU.
    """
    if not isinstance(source, str) or "__global__" not in source:
        raise CompileError("the source defines no __global__ function")
    signatures = kernel_signatures(source)
    if not signatures:
        raise CompileError("no `__global__ void name(...)` kernel found in the source (templates are not supported)")
    arch = _arch()
    opts = nvrtc_options(arch, options)
    key = hashlib.sha256(json.dumps([source, opts, nvrtc_version()]).encode()).hexdigest()[:32]
    with _LOCK:
        built = _MEMO.get(key)
        if built is None:
            root = _cache_root()
            cubin_path, meta_path = root / f"{key}.cubin", root / f"{key}.json"
            if cubin_path.exists() and meta_path.exists():
                meta = json.loads(meta_path.read_text())
                built = cubin_path.read_bytes(), meta["lowered"], meta["log"], cubin_path
            else:
                with phases.compiling():  # NVRTC: under the compile budget, holding no GPU
                    cubin, lowered, log = compile_program(source, list(signatures), opts)
                for path, data in ((cubin_path, cubin), (meta_path, json.dumps({"lowered": lowered, "log": log,
                                                                                  "name": name}).encode())):
                    tmp = path.with_suffix(f".{os.getpid()}.tmp")
                    tmp.write_bytes(data)
                    os.replace(tmp, path)  # atomic: concurrent workers never read a partial file
                built = cubin, lowered, log, cubin_path
            _MEMO[key] = built
        cubin, lowered, log, cubin_path = built
        module = RawModule(source, cubin, lowered, signatures, arch, log, cubin_path, options)  # fresh per call
        COMPILED.append(module)
    if not _device_available():
        raise NoCudaDevice(module)
    return module
