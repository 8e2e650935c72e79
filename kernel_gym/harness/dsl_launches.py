"""Launch hooks for the kernel DSLs a solution imports itself (CuTe DSL, TileLang): count its launches, name its
kernels for the profiler, skip them for the decoy ablation, as `launches.py` does for Triton.

Neither package is loaded before a candidate (their import costs seconds and a runner that imported one is not
reused: `integrity.JOB_IMPORTED_DSLS`), so the hooks go in when a job has imported one: `install()` is called after
the candidate's module is loaded and before each call (cheap when nothing is new). A kernel a solution compiles
and launches only inside its first forward call, with the package imported there too, is counted from its next
call on.

Where the launches pass (read from the installed packages, nvidia-cutlass-dsl 4.8.1 and tilelang 0.1.15):
- CuTe DSL: a compiled host function (a `@cute.jit` function called directly, or `cute.compile`'s result) runs
  through `JitExecutor.run_compiled_program` (the default MLIR engine; the executor is made by the compiled
  function's `to()`, which hands it the names), or, compiled with TVM-FFI, through the `__call__` of
  `TVMFFIJitCompiledFunction[WithKwargs]`. Its kernels' GPU names are the keys of the compiled function's
  `kernel_info` (`kernel_cutlass_<function>_<argument types>_<n>`).
- TileLang: a compiled kernel is a `JITKernel`, whose `__call__` allocates the outputs (`out_idx`) and runs the
  executable its adapter makes (`TVMFFIKernelAdapter._get_executable`, the default adapter on CUDA). The kernels'
  names are the `__global__` functions of `JITKernel.get_kernel_source()` (`<prim_func>_kernel`).
Ablation skips the executable where the adapter's is hooked (the outputs are allocated, never written), else the
whole call (it returns None). What was launched is kept in `LAUNCHED` (a compiled function, not its executors): its
cubins give the resource signals (`signals/dsl_resources.py`). Never exercised on a GPU yet:
tests/gpu/test_cute_dsl_gpu.py and test_tilelang_gpu.py.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from typing import Any

from kernel_gym.harness.launches import STATE

_GLOBAL = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(")
_MARK = "__kernel_gym_hook__"
LAUNCHED: dict[int, Any] = {}
"""The CuTe DSL compiled functions and TileLang kernels launched in this process (by id), for the resource signals."""


def cute_names(compiled: Any) -> set[str]:
    """The GPU kernels of a CuTe DSL compiled function (`kernel_info`'s keys), from it or its `jit_module`."""
    for holder in (compiled, getattr(compiled, "jit_module", None)):
        info = getattr(holder, "kernel_info", None)
        if isinstance(info, dict) and info:
            return {str(k) for k in info}
    return set()


def executor_names(executor: Any) -> set[str]:
    """The kernels of a CuTe DSL `JitExecutor`: what its compiled function's `to()` noted on it."""
    return set(getattr(executor, "_kernel_gym_names", None) or ())


def _naming(original: Callable) -> Callable:
    """A CuTe DSL compiled function's `to()`: the executor it makes carries the function's kernel names."""

    @functools.wraps(original)
    def to(self, *args: Any, **kwargs: Any) -> Any:
        executor = original(self, *args, **kwargs)
        try:
            executor._kernel_gym_names = cute_names(self)
            executor._kernel_gym_compiled = self
        except (AttributeError, TypeError):  # a proxy or a slotted object: counted, not named
            pass
        return executor

    setattr(to, _MARK, True)
    return to


def tilelang_names(kernel: Any) -> set[str]:
    """The `__global__` functions of a TileLang kernel's CUDA source (remembered on the kernel object)."""
    names = getattr(kernel, "_kernel_gym_names", None)
    if names is None:
        try:
            names = set(_GLOBAL.findall(kernel.get_kernel_source() or ""))
        except Exception:  # noqa: BLE001 - a kernel whose source cannot be read still counts as launched
            names = set()
        try:
            kernel._kernel_gym_names = names
        except AttributeError:
            pass
    return names


def _counting(original: Callable, names: Callable[[Any], set[str]], skip: Callable[[Any], bool]) -> Callable:
    """`original` (a method) counted as one launch of the candidate's own kernels when it returns, its kernels'
    names noted; under ablation it returns None without running when `skip(self)` says so. A hooked call inside
    another (a TVM-FFI function's own `__call__`) is not counted twice."""

    @functools.wraps(original)
    def call(self, *args: Any, **kwargs: Any) -> Any:
        if STATE.in_launch:
            return original(self, *args, **kwargs)
        STATE.names.update(names(self))
        compiled = getattr(self, "_kernel_gym_compiled", self)  # (an executor: the function it was made from)
        LAUNCHED.setdefault(id(compiled), compiled)
        if STATE.track_sizes:
            STATE.note_sizes(args, kwargs)
        if STATE.ablate and skip(self):
            STATE.count += 1
            return None
        STATE.in_launch += 1  # torch ops of the launcher (TileLang's output allocation) are not the candidate's
        try:
            result = original(self, *args, **kwargs)
        finally:
            STATE.in_launch -= 1
        STATE.count += 1
        return result

    setattr(call, _MARK, True)
    return call


def _executable(original: Callable) -> Callable:
    """TileLang's adapter hands out its executable: under ablation, one that launches nothing."""

    @functools.wraps(original)
    def get(self, *args: Any, **kwargs: Any) -> Any:
        executable = original(self, *args, **kwargs)
        return _skipped if STATE.ablate else executable

    setattr(get, _MARK, True)
    return get


def _skipped(*_args: Any, **_kwargs: Any) -> None:
    return None


def _always(_self: Any) -> bool:
    return True


def _tilelang_skip(kernel: Any) -> bool:
    """Skip the whole call unless the kernel's adapter hands out a hooked executable (then only the launch is)."""
    get = getattr(type(getattr(kernel, "adapter", None)), "_get_executable", None)
    return not getattr(get, _MARK, False)


# (module, class, method, names, skip): what `install` hooks once its module is loaded
HOOKS: tuple[tuple[str, str, str, Callable[[Any], set[str]], Callable[[Any], bool]], ...] = (
    ("cutlass.base_dsl.jit_executor", "JitExecutor", "run_compiled_program", executor_names, _always),
    ("cutlass.cutlass_dsl.tvm_ffi_provider", "TVMFFIJitCompiledFunction", "__call__", cute_names, _always),
    ("cutlass.cutlass_dsl.tvm_ffi_provider", "TVMFFIJitCompiledFunctionWithKwargs", "__call__", cute_names, _always),
    ("tilelang.jit.kernel", "JITKernel", "__call__", tilelang_names, _tilelang_skip),
)
# (module, class, method, wrapper): the methods that name an executor or hand out one
WRAPPERS: tuple[tuple[str, str, str, Callable[[Callable], Callable]], ...] = (
    ("cutlass.base_dsl.jit_executor", "JitCompiledFunction", "to", _naming),
    ("cutlass.cutlass_dsl.cuda_jit_executor", "CudaDialectJitCompiledFunction", "to", _naming),
    ("tilelang.jit.adapter.tvm_ffi", "TVMFFIKernelAdapter", "_get_executable", _executable),
)


def install() -> list[str]:
    """Hook every entry point of `HOOKS` and `WRAPPERS` whose module is loaded and that is not hooked yet; returns
    what it hooked."""
    if "cutlass.cute" in sys.modules and "cutlass.cutlass_dsl.tvm_ffi_provider" not in sys.modules:
        try:  # (loaded lazily by a first TVM-FFI compile, inside a call: hooked before it instead)
            import cutlass.cutlass_dsl.tvm_ffi_provider  # noqa: F401
        except Exception:  # noqa: BLE001 - no apache-tvm-ffi: no TVM-FFI functions to hook
            pass
    todo = [(m, c, name, lambda f, n=names, s=skip: _counting(f, n, s)) for m, c, name, names, skip in HOOKS]
    done = []
    for module, cls_name, method, wrap in [*todo, *WRAPPERS]:
        cls = getattr(sys.modules.get(module), cls_name, None)
        original = cls.__dict__.get(method) if isinstance(cls, type) else None
        if callable(original) and not getattr(original, _MARK, False):
            setattr(cls, method, wrap(original))
            done.append(f"{cls_name}.{method}")
    return done
