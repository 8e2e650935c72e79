"""Compile segments of a runner's request, told to its judge as they happen.

A request runs under the run limit (a call: max(2 s, 50x the reference's call) on cuda) except while its runner
compiles (Triton's JIT, NVRTC, a `load_inline` build in the judge's build service) or starts a tool (the profiler):
those segments are under the job's compile budget instead, and hold no GPU. The runner says when such a segment
starts (`{"phase": "compile"}`) and when it ends (`{"phase": "run"}`, answered by the judge's `{"resume": true}`
once the job holds its share of the GPU again), in the middle of the request in flight, as build requests are.

Before a segment starts, this process's GPU work is finished (a device synchronize): nothing of the job runs on
the GPU while the judge holds no GPU share for it. A kernel that never finishes makes that synchronize hang, under
the run limit: a first call that spins is a `timeout` in seconds, whatever it compiled before.

The messages are the runner's evidence and could be forged by its solution: a forged segment gains at most the
job's compile budget, the limit that applied to every compiling call before this split.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

# How a runner tells its judge (set by `runner/serve.py`): phase name -> None; None outside a runner.
TELL: Callable[[str], None] | None = None
_DEPTH = [0]


def _finish_gpu_work() -> None:
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """A compile segment (nested ones and other threads' count as part of the outermost one of the main thread)."""
    tell = TELL
    outermost = tell is not None and _DEPTH[0] == 0 and threading.current_thread() is threading.main_thread()
    if outermost:
        _finish_gpu_work()
        tell("compile")
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if outermost:
            tell("run")


def compiled(fn: Callable[..., Any], unless: Callable[..., bool] | None = None) -> Callable[..., Any]:
    """`fn` with every call a compile segment, but those for which `unless(*args, **kwargs)` is true."""
    import functools

    if getattr(fn, "__kernel_gym_compile__", False):
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if unless is not None and unless(*args, **kwargs):
            return fn(*args, **kwargs)
        with compiling():
            return fn(*args, **kwargs)

    wrapper.__kernel_gym_compile__ = True
    return wrapper


def install_triton() -> None:
    """Triton's JIT compiles through `triton.compiler.compile` (read when a kernel's device caches are made, at its
    first launch): every compile, new specializations included, is a segment. So is the autotuner's benchmarking of
    each configuration (`Autotuner._bench`): tuning, like compiling, is done once per key, and a dozen
    configurations benchmarked for ~0.1 s each would otherwise overrun a 2 s call limit. (It runs the solution's
    kernels holding no GPU share: other jobs' timing stops this runner meanwhile, judge/runners.py.) So is a
    compiled kernel's first load (`CompiledKernel._init_handles`: its launcher, which Triton builds with the host C
    compiler in some versions, and its binary's load), done once per kernel and process, never in a later launch."""
    import triton.compiler
    from triton.runtime import autotuner

    triton.compiler.compile = compiled(triton.compiler.compile)
    if hasattr(autotuner.Autotuner, "_bench"):
        autotuner.Autotuner._bench = compiled(autotuner.Autotuner._bench)  # noqa: SLF001
    kernel = getattr(triton.compiler, "CompiledKernel", None)
    if kernel is not None and hasattr(kernel, "_init_handles"):
        # (a segment the first time only: a loaded kernel returns at once, and some versions call it every launch)
        kernel._init_handles = compiled(kernel._init_handles, unless=_loaded)  # noqa: SLF001


def _loaded(kernel: Any) -> bool:
    return getattr(kernel, "module", None) is not None
