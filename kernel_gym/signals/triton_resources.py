"""Registers, shared memory and spills of a solution's Triton kernels.

Each kernel launched during the candidate's first call is recorded (`record_launches`: the kernel object, its
arguments with tensors replaced by one-element CPU stand-ins of the same dtype, its keyword arguments). Afterwards
the launch is compiled again exactly as Triton's JIT compiles it — Triton's own binder specialises the arguments,
`triton.compile(ASTSource(...), target=GPUTarget("cuda", cc, 32))` builds it (a hit in Triton's cache when the JIT
just built the same variant) — which gives its PTX, `metadata.shared` and `metadata.num_warps`:
- on the GPU, the JIT cache holds the same variant (same hash), loaded: its `n_regs` and `n_spills` (local memory
  bytes / 4, from `cuFuncGetAttribute`) are the driver's figures;
- on the CPU backend the kernels only ran under the interpreter; `ptxas -v` on the PTX gives registers and the
  stack frame (spills). No GPU is needed (~0.5-2 s a kernel cold, ~0.1 s from Triton's cache).
Limits: on the CPU backend the small task sizes change the specialisation (a size not divisible by 16 loses
vectorisation), so registers can differ from the GPU's by a few; an autotuned kernel is compiled with the config
its last launch used (on the CPU, what the interpreter ran). A kernel that cannot be compiled here falls back to
every variant in its JIT cache (GPU) or is left out.
"""

from __future__ import annotations

import contextlib
import logging
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kernel_gym.signals.resources import KernelResources, ptx_resources, vector_share

log = logging.getLogger(__name__)


@dataclass
class Launch:
    """One Triton launch: the kernel object (a JITFunction, or an InterpretedFunction on the CPU backend), its
    arguments (tensors replaced by one-element CPU tensors of the same dtype and alignment) and keyword arguments."""

    fn: Any
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def _stub(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):  # same dtype and the same address modulo 16 (Triton specialises on it)
        offset = (value.data_ptr() % 16) // value.element_size()
        return torch.empty(16, dtype=value.dtype)[offset:offset + 1]  # fresh CPU allocations are 64-byte aligned
    return value


@contextlib.contextmanager
def record_launches() -> Iterator[dict[int, Launch]]:
    """Within the block, remember the last launch of each Triton kernel object (by identity)."""
    from triton.runtime import interpreter, jit

    seen: dict[int, Launch] = {}
    saved = []
    for cls in (jit.JITFunction, interpreter.InterpretedFunction):
        original = vars(cls)["run"]

        def run(self, *args, grid, warmup, _original=original, **kwargs):
            if not warmup:
                try:
                    seen[id(self)] = Launch(self, tuple(_stub(a) for a in args),
                                            {k: _stub(v) for k, v in kwargs.items()})
                except Exception as e:  # noqa: BLE001 - recording is for signals only; the launch must go on
                    log.warning("signals: could not record a launch of %s: %s", getattr(self, "__name__", "?"), e)
            return _original(self, *args, grid=grid, warmup=warmup, **kwargs)

        saved.append((cls, original))
        cls.run = run
    try:
        yield seen
    finally:
        for cls, original in saved:
            cls.run = original


def from_jit_cache(launches: dict[int, Launch]) -> list[KernelResources]:
    """GPU: resources of every compiled variant of the launched kernels (read from their JIT caches)."""
    out = []
    for launch in launches.values():
        for cache in getattr(launch.fn, "device_caches", {}).values():
            kernels = next((c for c in cache if isinstance(c, dict)), {}) if isinstance(cache, tuple) else {}
            for kernel in kernels.values():
                regs, spills = getattr(kernel, "n_regs", None), getattr(kernel, "n_spills", None)
                meta = getattr(kernel, "metadata", None)
                if regs is None or meta is None:
                    continue
                out.append(KernelResources(getattr(kernel, "name", None) or getattr(launch.fn, "__name__", "?"), int(regs),
                                           int(getattr(meta, "shared", 0) or 0), 4 * int(spills or 0),
                                           threads=32 * int(getattr(meta, "num_warps", 4))))
    return out


def _language_objects() -> list[Any]:
    import triton.language as tl

    return [tl, tl.core, tl.math, tl.tensor, tl.dtype, getattr(tl.core, "tensor_descriptor_base", None)]


# triton.language as it is before any kernel is interpreted. The interpreter patches these objects while it runs
# a kernel and, when an interpreted kernel calls a @triton.jit function (its own helper, or tl.max / tl.zeros /
# x.sum() of the standard library), leaves them patched (Triton 3.8), which breaks a later compile in the same
# process; `_pristine_language` puts them back for the compile.
_LANG_SNAPSHOT = [(obj, dict(vars(obj))) for obj in _language_objects() if obj is not None]


def _swap_interpreted(memo: dict[int, Any]) -> list[tuple[Any, str, Any]]:
    """Under the interpreter, triton.language's own @jit functions (tl.zeros, tl.max, tensor.sum, ...) are
    InterpretedFunctions, which the code generator would call as plain Python; put JITFunction views in their place.
    Returns what was replaced, to put back."""
    import sys

    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction

    holders = [m for n, m in list(sys.modules.items()) if n.startswith("triton.language") and m is not None]
    swapped = []
    for holder in [*holders, tl.tensor]:
        for name, value in list(vars(holder).items()):
            if isinstance(value, InterpretedFunction):
                swapped.append((holder, name, value))
                setattr(holder, name, _jit_view(value, memo))
    return swapped


@contextlib.contextmanager
def _pristine_language() -> Iterator[None]:
    current = [(obj, dict(vars(obj))) for obj, _ in _LANG_SNAPSHOT]

    def apply(states: list[tuple[Any, dict[str, Any]]]) -> None:
        for obj, state in states:
            for name in [n for n in vars(obj) if n not in state]:
                delattr(obj, name)
            for name, value in state.items():
                if vars(obj).get(name, _MISSING) is not value:
                    setattr(obj, name, value)

    apply(_LANG_SNAPSHOT)
    swapped = _swap_interpreted({})
    try:
        yield
    finally:
        for holder, name, value in swapped:
            setattr(holder, name, value)
        apply(current)


_MISSING = object()


def _jit_view(fn: Any, memo: dict[int, Any]) -> Any:
    """A JITFunction for an InterpretedFunction, whose globals see the other interpreted kernels as JITFunctions
    too (so kernels calling @triton.jit helpers compile)."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    if isinstance(fn, JITFunction):
        return fn
    if id(fn) in memo:
        return memo[id(fn)]
    py = fn.fn
    scope: dict[str, Any] = {}
    clone = types.FunctionType(py.__code__, scope, py.__name__, py.__defaults__, py.__closure__)
    clone.__kwdefaults__, clone.__module__, clone.__qualname__ = py.__kwdefaults__, py.__module__, py.__qualname__
    clone.__annotations__ = dict(py.__annotations__)
    jit = memo[id(fn)] = JITFunction(clone)
    scope.update({k: _jit_view(v, memo) if isinstance(v, InterpretedFunction) else v
                  for k, v in py.__globals__.items()})
    return jit


def compile_launch(launch: Launch, capability: int = 90) -> Any:
    """Compile one recorded launch for sm_`capability` as Triton's JIT would (Triton's cache makes a repeat cheap)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    fn = _jit_view(launch.fn, {})
    target = GPUTarget("cuda", capability, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    kwargs = dict(launch.kwargs)  # the options JITFunction.run adds before it compiles (same hash as the JIT's)
    kwargs["debug"] = kwargs.get("debug", getattr(fn, "debug", None)) or triton.knobs.runtime.debug
    if getattr(triton.knobs.compilation, "instrumentation_mode", None) is not None:
        kwargs["instrumentation_mode"] = triton.knobs.compilation.instrumentation_mode
    bound, specialization, options = binder(*launch.args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, options)
    with _pristine_language(), triton.knobs.runtime.scope():
        triton.knobs.runtime.interpret = False  # the code generator must not take the interpreter's paths
        return triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options.__dict__)


def _loaded(launch: Launch, digest: str) -> Any:
    """The kernel of the JIT cache compiled from the same source and specialisation (same hash), if loaded."""
    for cache in getattr(launch.fn, "device_caches", {}).values():
        kernels = next((c for c in cache if isinstance(c, dict)), {}) if isinstance(cache, tuple) else {}
        for kernel in kernels.values():
            if getattr(getattr(kernel, "metadata", None), "hash", None) == digest and getattr(kernel, "n_regs", None):
                return kernel
    return None


def launch_resources(launch: Launch, capability: int = 90) -> list[KernelResources]:
    """Resources of the kernel variant a launch ran: ptxas' figures for its PTX, or, when the same variant is loaded
    on the GPU, the driver's (`n_regs`, `n_spills`)."""
    compiled = compile_launch(launch, capability)
    meta = compiled.metadata
    ptx = compiled.asm.get("ptx", "")
    threads, shared, vectors = 32 * int(meta.num_warps), int(meta.shared or 0), vector_share(ptx)
    loaded = _loaded(launch, meta.hash)
    if loaded is not None:
        return [KernelResources(meta.name, int(loaded.n_regs), shared, 4 * int(loaded.n_spills or 0),
                                threads=threads, vector_share=vectors)]
    return [KernelResources(r.name, r.regs, max(r.smem, shared), r.spill_bytes, threads=threads,
                            vector_share=vectors) for r in ptx_resources(ptx)]


def triton_kernels(launches: dict[int, Launch], capability: int = 90) -> list[KernelResources]:
    """Resources of each recorded launch; a kernel that cannot be compiled here falls back to its JIT cache's
    variants (on the GPU) or is left out."""
    out = []
    for launch in launches.values():
        try:
            out.extend(launch_resources(launch, capability))
        except Exception as e:  # noqa: BLE001 - a signal we cannot compute is left out, never a verdict
            cached = from_jit_cache({0: launch})
            if not cached:
                log.warning("no resources for Triton kernel %s (sm_%d): %s", getattr(launch.fn, "__name__", "?"),
                            capability, e)
            out.extend(cached)
    return out
