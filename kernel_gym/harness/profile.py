"""GPU-time share of the candidate's own kernels, from the torch profiler (cuda only).

Own kernels are the Triton kernels the launch hooks saw and the `__global__` functions of the extensions the
worker built. Everything else (cuBLAS, cuDNN, ATen elementwise kernels) is library time. A solution whose own
kernels carry almost none of the GPU time is a decoy or a library call behind a custom kernel.

The same trace shows which stream each kernel ran on. Before the profiled call a marker kernel is queued on every
stream the launch gate holds (the legacy default stream and torch's pooled streams), so their profiler stream ids
are known; a kernel on any other stream is *ungated*: a non-blocking stream the harness cannot make wait for the
gate, whose work could overlap it unseen. The timing stage then times that solution without the gate.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from kernel_gym.checks import library_policy
from kernel_gym.harness import phases

# Minimum share of kernel time in the solution's own kernels, by anti-hack preset. The library kernels of what the
# preset allows on the task (kernel_gym.checks.library_policy: the GEMM/convolution beside other work, the final
# reduction of the kernel's result) are left out of the total: a 4096^3 cuBLAS GEMM legitimately dwarfs its fused
# epilogue, and a mean of per-row losses costs a fixed few microseconds, while a decoy beside a library elementwise
# op does not get its op left out. `permissive` leaves out library GEMM/convolution kernels too.
MIN_OWN_SHARE = {"strict": 0.5, "kevin-strict": 0.5, "standard": 0.5, "permissive": 0.1, "none": 0.5}
EXCLUDES_LIBRARY_GEMM = {"standard", "permissive", "none"}
# bound at import, before any candidate code runs
_SLEEP = torch.cuda._sleep
_ON_STREAM = torch.cuda.stream
_SYNC = torch.cuda.synchronize
_CUDA = torch.autograd.DeviceType.CUDA
_LIBRARY_GEMM = re.compile(library_policy.LIBRARY_GEMM.kernels, re.I)
# Fills (torch.zeros/ones/full, zero_, fill_ of the solution's own buffers): allocation, not library compute; left
# out of the total like memsets (a `torch.zeros` output costs about one write pass, which can rival the kernel).
_FILL = re.compile(library_policy.ALLOCATION.kernels, re.I)


def excludes_library_gemm(preset: str, task: Any = None) -> bool:
    """Leave library GEMM/conv kernels out of the total? Under `standard`/`permissive`, unless the task's reference
    is a single GEMM/conv or has none (`task`: a kernel_gym.checks.task_policy.TaskPolicy), where the library call
    would be the whole work and must count against the solution's own kernels."""
    return preset in EXCLUDES_LIBRARY_GEMM and (task is None or task.library_gemm)


def excluded(preset: str, task: Any = None) -> list[str]:
    """The policy's allowances whose library kernels the profiled call leaves out of the total on this task."""
    names = library_policy.excluded_kernels(preset, task)
    if excludes_library_gemm(preset, task) and "library_gemm" not in names:
        names.append("library_gemm")
    return names


@dataclass(frozen=True)
class Profile:
    share: float  # own kernels' share of kernel time (1.0 when no kernel ran)
    total_ms: float  # total kernel time counted
    top: list[str]  # the largest library kernels by time
    ungated: list[str]  # kernels that ran on a stream outside `gated` (empty when no streams were given)
    # when the stream check could not run (the trace did not start with one marker per gated stream): what it saw
    skipped: dict[str, float] | None = None


def profile_call(fn: Callable[[], Any], own_names: set[str], exclude_library_gemm: bool = False,
                 gated: Sequence[torch.cuda.Stream] = (), exclude: Sequence[str] = ()) -> Profile:
    """Run fn under the profiler: its own kernels' share of kernel time, and which kernels ran off the gated streams.

    With `gated` streams, a marker kernel is queued on each first and the device synchronized, so the markers are
    the first device events of the trace and give the gated streams' profiler ids (see `summarize`)."""
    prof = profile(activities=[ProfilerActivity.CUDA])
    with phases.compiling():  # the profiler's start (CUPTI: seconds the first time) is a tool's start-up, no GPU work
        prof.__enter__()
    try:
        for stream in gated:
            with _ON_STREAM(stream):
                _SLEEP(1)
        _SYNC()
        fn()
        _SYNC()
    finally:
        with phases.compiling():  # stopping it and reading its trace: host work
            prof.__exit__(None, None, None)
    with phases.compiling():
        return summarize(prof.events(), own_names, exclude_library_gemm, markers=len(gated), exclude=exclude)


def summarize(events: Sequence[Any], own_names: set[str], exclude_library_gemm: bool = False, markers: int = 0,
              exclude: Sequence[str] = ()) -> Profile:
    """A profile from the trace's events (torch FunctionEvents).

    Memcpy/memset and fill kernels (torch.zeros/full of the solution's buffers) are never counted; with
    exclude_library_gemm, library GEMM/convolution kernels (cuBLAS, cuBLASLt, CUTLASS, cuDNN) are not either; nor
    the library kernels of the allowances `exclude` names (kernel_gym.checks.library_policy: `final_reduction`'s
    ATen reduce kernels).
    `markers`: how many marker kernels (one per gated stream) lead the device events. Their stream ids are the
    gated ones; a later kernel on another id is ungated. The stream check is skipped (nothing reported ungated)
    unless the trace looks as expected: that many leading events of one name on that many distinct ids, so a
    profiler that drops events or reports no stream ids never makes a genuine solution look ungated."""
    device = sorted((e for e in events if e.device_type == _CUDA and not e.name.startswith("[memory]")),
                    key=lambda e: e.time_range.start)
    lead = 0
    while lead < min(markers, len(device)) and device[lead].name == device[0].name:
        lead += 1
    head, device = device[:lead], device[lead:]
    gated_ids = {e.device_resource_id for e in head}
    ungated: list[str] = []
    skipped = None
    if markers and lead == markers and len(gated_ids) == markers:
        ungated = sorted({e.name for e in device if e.device_resource_id not in gated_ids})
    elif markers:
        skipped = {"markers": float(markers), "lead": float(lead), "ids": float(len(gated_ids)),
                   "events": float(len(device) + lead)}
    left_out = library_policy.kernel_pattern([*exclude, *(["library_gemm"] if exclude_library_gemm else [])])
    own = total = 0.0
    library: dict[str, float] = {}
    for event in device:
        name = event.name
        if name.startswith(("Memcpy", "Memset")) or _FILL.search(name):
            continue
        us = getattr(event, "device_time", None)
        us = float((event.cuda_time if us is None else us) or 0.0)  # torch < 2.4 names it cuda_time
        mine = any(n and n in name for n in own_names)
        if not mine and left_out is not None and left_out.search(name):
            continue
        total += us
        if mine:
            own += us
        else:
            library[name] = library.get(name, 0.0) + us
    top = [n for n, _ in sorted(library.items(), key=lambda kv: -kv[1])[:3]]
    return Profile(own / total if total > 0 else 1.0, total / 1e3, top, ungated, skipped)
