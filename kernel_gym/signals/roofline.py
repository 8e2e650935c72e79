"""Roofline signals: the task's minimum bytes and its FLOPs, and how close the candidate's time comes to the
fastest time the GPU's peaks allow.

    task_bytes   = bytes of the inputs + the reference model's parameters and buffers + the outputs
                   (each read or written once: a lower bound on the DRAM traffic of any correct kernel)
    task_flops   = FLOPs of the reference's forward at the job's sizes (torch.utils.flop_counter.FlopCounterMode:
                   matmuls, convolutions, attention; elementwise ops and reductions count 0)
    roofline_min_ms  = max(task_bytes / peak_bandwidth, task_flops / peak_flops)
    bandwidth_util   = task_bytes / runtime / peak_bandwidth       (achieved_bandwidth / peak)
    flops_util       = task_flops / runtime / peak_flops
    roofline_util    = roofline_min_ms / runtime_ms                (1.0 = at the roofline)
    roofline_max_speedup = baseline_ms / roofline_min_ms           (the most any kernel could gain)
    roofline_violation   = 1.0 when runtime_ms < roofline_min_ms / VIOLATION_FACTOR, else 0.0

A violation means the measured time is below what the hardware allows for the task's data: the timing, the
byte count (a task whose output does not need all of its input) or the peaks are wrong, or the candidate skipped
work in a way the checks missed. It is a flag for review; it rejects nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from kernel_gym.signals.hardware import GpuSpec

VIOLATION_FACTOR = 1.5
"""How far below the roofline's minimum time a measurement must be to be flagged (margin for the configured
peaks being below the datasheet's, e.g. copy bandwidth 4.3 vs 4.8 TB/s)."""


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes a tensor really spans: broadcast (stride-0) dimensions count once."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n * t.element_size()


def _tensors(values: Any) -> Iterable[torch.Tensor]:
    from torch.utils._pytree import tree_leaves

    return (v for v in tree_leaves(values) if isinstance(v, torch.Tensor))


def unique_bytes(values: Any) -> int:
    """Total bytes of the distinct tensors in a nested structure (a tensor passed twice counts once)."""
    seen: set[tuple[int, int, tuple[int, ...]]] = set()
    total = 0
    for t in _tensors(values):
        key = (t.data_ptr(), t.element_size(), tuple(t.shape)) if t.device.type != "meta" else (id(t), 0, ())
        if key not in seen:
            seen.add(key)
            total += tensor_bytes(t)
    return total


def task_counts(model: torch.nn.Module, inputs: list[Any]) -> tuple[int, int]:
    """(task_bytes, task_flops) of running the reference `model` on `inputs` once (under no_grad)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        out = model(*inputs)
    state = [*model.parameters(), *model.buffers()]
    return unique_bytes([inputs, state, out]), int(counter.get_total_flops())


def roofline(task_bytes: int, task_flops: int, runtime_ms: float, baseline_ms: float, spec: GpuSpec, *,
             dtype: str = "float32", allow_precision: bool = False) -> dict[str, float]:
    """Roofline signals of one timed candidate on `spec` (see the module docstring)."""
    peak_flops = spec.peak_flops(dtype, allow_precision)
    min_s = max(task_bytes / spec.bandwidth, task_flops / peak_flops)
    seconds = runtime_ms / 1e3
    out = {"peak_bandwidth": spec.bandwidth, "peak_flops": peak_flops,
           "achieved_bandwidth": task_bytes / seconds if seconds > 0 else 0.0,
           "achieved_flops": task_flops / seconds if seconds > 0 else 0.0,
           "roofline_min_ms": min_s * 1e3}
    out["bandwidth_util"] = out["achieved_bandwidth"] / spec.bandwidth
    out["flops_util"] = out["achieved_flops"] / peak_flops
    out["roofline_util"] = min_s / seconds if seconds > 0 else 0.0
    out["roofline_max_speedup"] = baseline_ms / out["roofline_min_ms"] if min_s > 0 else 0.0
    out["roofline_violation"] = float(min_s > 0 and runtime_ms * VIOLATION_FACTOR < out["roofline_min_ms"])
    return {k: round(v, 6) if abs(v) < 1e6 else float(f"{v:.6g}") for k, v in out.items()}


def task_signals(task_bytes: int, task_flops: int) -> dict[str, float]:
    """Device-independent: the task's bytes, FLOPs and arithmetic intensity (FLOP per byte)."""
    out = {"task_bytes": float(task_bytes), "task_flops": float(task_flops)}
    if task_bytes > 0:
        out["arithmetic_intensity"] = round(task_flops / task_bytes, 4)
    return out
