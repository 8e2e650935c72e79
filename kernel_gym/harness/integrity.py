"""Integrity of the harness inside a worker: detect candidates that patch timers, torch or our own code.

A snapshot of the identity of every attribute of the modules the harness relies on is taken when the worker
starts, before any candidate runs; after each candidate interaction the live objects are compared with it.
Anything replaced (a monkeypatched `torch.cuda.Event.elapsed_time`, `time.perf_counter`, `torch.allclose`,
a tensor method, a function's `__code__` in kernel_gym.harness) is reported by name. Tracing hooks,
`__torch_function__`/dispatch modes and precision flags are checked too.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import types
from collections.abc import Iterator
from typing import Any

import torch
import torch.utils.deterministic

_WATCHED_MODULES = ("torch", "torch.cuda", "torch.nn.functional", "time", "builtins", "os", "gc", "threading",
                    "numpy", "triton", "triton.testing", "kernel_gym.harness.timing", "kernel_gym.harness.integrity",
                    "kernel_gym.runner.session", "kernel_gym.runner.serve", "kernel_gym.runner.evidence",
                    "kernel_gym.runner.refusal", "kernel_gym.tasks.loading", "kernel_gym.sandbox.channel",
                    "kernel_gym.sandbox.shared", "kernel_gym.cuda_raw", "kernel_gym.harness.cuda",
                    "torch.utils.cpp_extension", "kernel_gym.harness.launches", "kernel_gym.harness.profile",
                    "kernel_gym.harness.dsl_launches")
# Kernel DSLs a solution imports itself (not preloaded): their compiled kernels, settings and functions stay in
# memory after the job, where the next job of the runner would meet whatever this one left in them (a patched
# `helion.kernel`, a CuTe DSL or TileLang JIT cache, the launch hooks kernel_gym.harness.dsl_launches put in them):
# a runner whose job imported one is not reused. (TileLang's import also adds its TVM to sys.path and PYTHONPATH;
# `restore_state` puts those back, and the runner goes anyway.)
JOB_IMPORTED_DSLS = ("helion", "cutlass", "tilelang")
_WATCHED_CLASSES = (torch.Tensor, torch.cuda.Event, torch.nn.Module, threading.Thread)
# The harness's own classes, resolved when the snapshot is taken (their methods decide the verdict).
_WATCHED_CLASS_NAMES = ("kernel_gym.runner.session.Session", "kernel_gym.sandbox.channel.Channel",
                        "kernel_gym.sandbox.shared.Attached", "kernel_gym.cuda_raw.RawKernel",
                        "kernel_gym.cuda_raw.RawModule")


def _watched_classes() -> list[type]:
    """torch's and the harness's classes whose methods a candidate could replace to change a verdict."""
    classes = list(_WATCHED_CLASSES)
    classes += [c for c in vars(torch.nn).values() if isinstance(c, type) and issubclass(c, torch.nn.Module)]
    for dotted in _WATCHED_CLASS_NAMES:
        module_name, _, cls_name = dotted.rpartition(".")
        cls = getattr(sys.modules.get(module_name), cls_name, None)
        if isinstance(cls, type):
            classes.append(cls)
    return classes


def _attrs(obj: Any) -> dict[str, int]:
    out = {}
    for name in list(vars(obj)):
        if name.startswith("__") and name not in ("__torch_function__", "__torch_dispatch__", "__call__", "__eq__",
                                                  "__new__", "__init__", "__array__", "__dlpack__"):
            continue
        try:
            value = vars(obj)[name]
        except KeyError:
            continue
        if not (callable(value) or isinstance(value, (types.ModuleType, property, staticmethod, classmethod))):
            continue  # plain state (counters, flags, caches) changes legitimately
        out[name] = id(value)
        code = getattr(value, "__code__", None)
        if code is not None:
            out[name + ".__code__"] = id(code)
    return out


def precision_flags() -> dict[str, Any]:
    return {
        "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "matmul.allow_fp16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "matmul.allow_bf16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        "cudnn.enabled": torch.backends.cudnn.enabled,
        "cudnn.deterministic": torch.backends.cudnn.deterministic,
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "fill_uninitialized_memory": torch.utils.deterministic.fill_uninitialized_memory,
    }


def pin_precision(device: str = "cpu") -> None:
    """Full fp32 everywhere, identically for reference and candidate (CUDA Agent's TF32 hole). On cpu also
    NaN-poison fresh memory: with deterministic algorithms on (warn-only, so no op refuses to run), torch fills
    every `torch.empty*` tensor with NaN (floats) or the largest value (integers), so an output element the
    solution never wrote reads NaN (`uninitialized_output`), as the cuda worker's NaN fill does there. (On cuda
    deterministic mode would change algorithms and their speed; the worker poisons the allocator's memory instead.)"""
    if device != "cuda":
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True  # torch's default
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True  # torch's default


@contextlib.contextmanager
def fresh_memory_poisoned(device: str) -> Iterator[None]:
    """cuda, for one call: every `torch.empty*` tensor is filled as on cpu (NaN for floats, the largest value for
    integers; deterministic algorithms on, warn-only), and the previous settings put back after. The ablation trial
    (decoy_kernel) skips the solution's own kernels and expects what they would have written to be missing; a
    scratch buffer from `torch.empty` (a block's partial sums) otherwise holds the previous call's values, since the
    caching allocator hands the same block back: on an H100 (2026-12-08) a genuine partial-sums kernel read as a
    decoy. On cpu this is always on (`pin_precision`)."""
    if device != "cuda":
        yield
        return
    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
           torch.utils.deterministic.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
        torch.utils.deterministic.fill_uninitialized_memory = was[2]


class Snapshot:
    """What the harness looks like before any candidate code runs."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, int]] = {}
        for name in _WATCHED_MODULES:
            module = sys.modules.get(name)
            if isinstance(module, types.ModuleType):
                self.objects[name] = _attrs(module)
        self.classes = {f"{cls.__module__}.{cls.__qualname__}": cls for cls in _watched_classes()}
        for key, cls in self.classes.items():
            self.objects[key] = _attrs(cls)
        self.module_ids = {name: id(sys.modules.get(name)) for name in self.objects if name in sys.modules}
        self.flags = precision_flags()
        self.perf_counter = time.perf_counter

    def _live(self, key: str) -> Any:
        if key in self.module_ids:
            return sys.modules.get(key)
        return self.classes.get(key)

    def changes(self) -> list[str]:
        """Names of everything patched since the snapshot (empty when intact)."""
        found = []
        for name, module_id in self.module_ids.items():
            if id(sys.modules.get(name)) != module_id:
                found.append(f"sys.modules[{name!r}] replaced")
        for key, attrs in self.objects.items():
            live = self._live(key)
            if live is None:
                continue
            now = _attrs(live)
            for attr, ident in attrs.items():
                if now.get(attr) != ident:
                    found.append(f"{key}.{attr}")
            found.extend(f"{key}.{attr} (added)" for attr in now.keys() - attrs.keys()
                         if attr in ("__torch_function__", "__torch_dispatch__"))
        if sys.gettrace() is not None or sys.getprofile() is not None:
            found.append("sys.settrace/setprofile hook installed")
        if torch._C._is_torch_function_mode_enabled() and torch.overrides._get_current_function_mode_stack():
            found.append("a __torch_function__ mode is active")
        if torch._C._len_torch_dispatch_stack() > 0:
            found.append("a __torch_dispatch__ mode is active")
        module_hooks = torch.nn.modules.module
        for name in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                     "_global_backward_pre_hooks", "_global_forward_hooks_always_called"):
            if getattr(module_hooks, name, None):
                found.append(f"a global module hook is registered ({name})")
        flags = precision_flags()
        found.extend(f"torch flag {k} changed to {flags[k]!r}" for k in flags if flags[k] != self.flags[k])
        return found[:20]


def process_state() -> dict[str, Any]:
    """Process-wide settings a solution may change for itself without touching the harness, which would carry over
    to the next job of a reused runner (another solution's dtype, device, threads, environment, import path): read
    at a job's start and put back at its end (`restore_state`); a runner with a change that cannot be put back is
    not reused."""
    return {
        "default_dtype": str(torch.get_default_dtype()),
        "default_device": str(torch.get_default_device()) if hasattr(torch, "get_default_device") else "",
        "grad_enabled": torch.is_grad_enabled(),
        "num_threads": torch.get_num_threads(),
        "environ": dict(os.environ),
        "sys_path": list(sys.path),
        "fileless_modules": sorted(name for name, module in list(sys.modules.items())
                                   if isinstance(module, types.ModuleType) and _fileless(module)),
        "kernel_dsls": [name for name in JOB_IMPORTED_DSLS if name in sys.modules],
    }


def _fileless(module: types.ModuleType) -> bool:
    """A module made in memory (no file, no package path, no spec origin): what a solution plants in sys.modules."""
    spec = getattr(module, "__spec__", None)
    return (getattr(module, "__file__", None) is None and getattr(module, "__path__", None) is None
            and (spec is None or getattr(spec, "origin", None) in (None, "")))


def restore_state(before: dict[str, Any]) -> list[str]:
    """Put back what a job changed of `process_state()`: dtype, device, grad mode, threads, environment and import
    path are reset; what cannot be (modules made in memory, a kernel DSL the job imported) is returned by name, and
    that runner is not reused."""
    now = process_state()
    changed = state_changes(before, now)
    if not changed:
        return []
    if now["default_dtype"] != before["default_dtype"]:
        torch.set_default_dtype(getattr(torch, before["default_dtype"].removeprefix("torch.")))
    if now["default_device"] != before["default_device"] and hasattr(torch, "set_default_device"):
        torch.set_default_device(None if before["default_device"] in ("", "cpu") else before["default_device"])
    torch.set_grad_enabled(before["grad_enabled"])
    if now["num_threads"] != before["num_threads"]:
        torch.set_num_threads(before["num_threads"])
    os.environ.clear()
    os.environ.update(before["environ"])
    sys.path[:] = before["sys_path"]
    return state_changes(before, process_state())


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What changed between two `process_state()` readings, by name (environment variables and modules named)."""
    found = [key for key in ("default_dtype", "default_device", "grad_enabled", "num_threads", "sys_path")
             if before.get(key) != after.get(key)]
    env_a, env_b = before.get("environ", {}), after.get("environ", {})
    found += [f"environ[{k!r}]" for k in sorted(set(env_a) | set(env_b)) if env_a.get(k) != env_b.get(k)]
    found += [f"sys.modules[{m!r}] (made in memory)"
              for m in sorted(set(after.get("fileless_modules", ())) - set(before.get("fileless_modules", ())))]
    found += [f"sys.modules[{m!r}] (a kernel DSL imported by the job)"
              for m in sorted(set(after.get("kernel_dsls", ())) - set(before.get("kernel_dsls", ())))]
    return found[:20]
