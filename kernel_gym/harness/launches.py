"""Hooks on kernel launches inside a worker: count the candidate's own launches, or skip them (ablation).

Installed once when the worker starts. Counting tells whether a custom kernel ran at all; skipping every
Triton launch for one trial tells whether the kernels carry the work: a solution still correct with its
kernels skipped is a decoy (its result was computed some other way).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LaunchState:
    count: int = 0
    ablate: bool = False  # when True, Triton launches return without running
    names: set[str] = field(default_factory=set)  # kernel names the candidate launched (for the profiler check)
    in_launch: int = 0  # > 0 while a kernel launch runs (torch ops made by the launcher are not the candidate's)
    track_sizes: bool = False  # while True (the op audit), `largest` follows the tensors handed to own kernels
    largest: int = 0  # most elements of one tensor handed to an own kernel since tracking began
    in_extension: int = 0  # > 0 while an extension function of the solution runs (its C++ wrapper, after its kernels)

    def reset(self) -> None:
        self.count, self.ablate, self.in_launch = 0, False, 0
        self.track_sizes, self.largest, self.in_extension = False, 0, 0
        self.names.clear()

    def note_sizes(self, args: tuple, kwargs: dict) -> None:
        """Remember the largest tensor among a launch's arguments (only while the op audit tracks sizes)."""
        for a in (*args, *kwargs.values()):
            numel = getattr(a, "numel", None)
            if callable(numel) and hasattr(a, "data_ptr"):
                self.largest = max(self.largest, int(numel()))


STATE = LaunchState()


def _wrap_triton_run(original: Callable) -> Callable:
    @functools.wraps(original)
    def run(self, *args, grid, warmup, **kwargs):
        if warmup:
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        STATE.names.add(getattr(self, "__name__", None) or getattr(getattr(self, "fn", None), "__name__", "?"))
        if STATE.track_sizes:
            STATE.note_sizes(args, kwargs)
        if STATE.ablate:
            STATE.count += 1
            return None
        STATE.in_launch += 1
        try:
            result = original(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            STATE.in_launch -= 1
        STATE.count += 1  # only launches that succeeded count (a failing launch behind `except` is no kernel)
        return result

    run.__kernel_gym_hook__ = True
    return run


def install_triton_hooks() -> None:
    from triton.runtime import interpreter, jit

    for cls in (jit.JITFunction, interpreter.InterpretedFunction):
        if not getattr(cls.run, "__kernel_gym_hook__", False):
            cls.run = _wrap_triton_run(cls.run)


def counted_extension(module: types.ModuleType) -> types.ModuleType:
    """A view of a compiled extension whose functions count as the candidate's own launches."""
    proxy = types.ModuleType(module.__name__)
    for name in dir(module):
        value = getattr(module, name)
        if callable(value) and not name.startswith("_"):
            value = _counted(value)
        setattr(proxy, name, value)
    return proxy


def _counted(fn: Callable) -> Callable:
    def call(*args: Any, **kwargs: Any) -> Any:
        if STATE.track_sizes:
            STATE.note_sizes(args, kwargs)
        STATE.in_extension += 1
        try:
            result = fn(*args, **kwargs)
        finally:
            STATE.in_extension -= 1
        if STATE.track_sizes:  # what it returns is its kernels' result (one pass over it is a final reduction's budget)
            STATE.note_sizes(result if isinstance(result, (tuple, list)) else (result,), {})
        STATE.count += 1
        return result

    call.__name__ = getattr(fn, "__name__", "extension_function")
    call.__doc__ = getattr(fn, "__doc__", None)
    return call
