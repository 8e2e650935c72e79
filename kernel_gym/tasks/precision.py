"""A task at a precision (KernelBench's `precision` option): its floating inputs and Model's parameters cast to
fp32, fp16 or bf16, and everything that follows the task's dtype (the prompt, tolerances, the error budget's floor,
the static `precision` rule) following the cast instead.

    >>> at_precision(load_task("level1/matmul"), "bf16").dtype
    'bfloat16'
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kernel_gym.errors import ConfigError

PRECISIONS = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
FLOATING = ("float32", "float16", "bfloat16")


def dtype_of(precision: str | None) -> str | None:
    """The torch dtype name of a precision ("bf16" -> "bfloat16"); None for None (the task's own)."""
    if precision is None:
        return None
    if precision not in PRECISIONS:
        raise ConfigError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)} (or None: the "
                          "task's own)")
    return PRECISIONS[precision]


def possible(task: Any) -> tuple[str, ...]:
    """The precisions a task could run at: every one for a floating task written in PyTorch, only its own for a C
    task (its C function's pointer types are fixed) or a task that is not floating."""
    native = next((p for p, d in PRECISIONS.items() if d == task.metadata.get("native_dtype", task.dtype)), None)
    if "c_source" in task.metadata or native is None:
        return (native,) if native else ()
    return tuple(PRECISIONS)


def supported(task: Any) -> tuple[str, ...]:
    """The precisions a task runs at: its KERNEL_GYM["precisions"] when it lists them; for a built-in task the
    manifest's, measured (`python -m kernel_gym.tasks.precisions`: its reference stays finite and close to float64
    there); else every possible one."""
    listed = task.metadata.get("precisions")
    if listed:
        return tuple(str(p) for p in listed)
    from kernel_gym.tasks.manifest import read_manifest

    measured = read_manifest().get("tasks", {}).get(task.id, {}).get("precisions")
    return tuple(measured) if measured else possible(task)


def at_precision(task: Any, precision: str | None) -> Any:
    """The task as it runs at `precision`: its dtype that precision's, its native dtype kept in
    metadata["native_dtype"], and its own atol/rtol (set for its native dtype) dropped for the dtype's defaults. The
    same task for None or its own precision."""
    dtype = dtype_of(precision)
    if dtype is None or dtype == task.dtype:
        return task
    if precision not in supported(task):
        raise ConfigError(f"task {task.id} does not run at {precision} (it runs at: "
                          f"{', '.join(supported(task)) or 'its own dtype ' + task.dtype})")
    meta = {k: v for k, v in task.metadata.items() if k not in ("atol", "rtol")}
    meta.update(dtype=dtype, native_dtype=task.dtype, precision=precision)
    return replace(task, metadata=meta)


def native_bf16_on_cpu(task: Any) -> str | None:
    """The warning a task that is bf16 natively (level 3) gets on the CPU backend, as `precision="bf16"` gets it at
    make (kernel_gym.device.CPU_BF16); None for a task of any other dtype."""
    if task.dtype != "bfloat16":
        return None
    from kernel_gym.device import CPU_BF16

    return (f"task {task.id} is bf16 natively (so is every level-3 task), and on cpu: {CPU_BF16}; precision='fp32' "
            "judges the same task cast to fp32")
