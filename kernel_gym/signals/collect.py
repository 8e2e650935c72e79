"""The signals of one evaluation, gathered inside the worker (the runner calls these; none of them raises).

- `record_launches()`: wraps the candidate's first call, remembering its Triton launches.
- `cuda_compile_signals(...)`: the CPU backend's CUDA path, after the nvcc check (resources from its cubin).
- `before_timing(...)`: a correct candidate: structure, compile-time resources and occupancy.
- `after_timing(...)`: a timed candidate: the task's bytes and FLOPs, the roofline.

Every part is computed on its own: one that fails (a missing tool, an unusual kernel) is logged and left out,
and the verdict never depends on a signal.
"""

from __future__ import annotations

import hashlib
import json
import logging
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernel_gym.paths import cache_dir
from kernel_gym.signals import hardware
from kernel_gym.signals.launch_config import launch_configs
from kernel_gym.signals.occupancy import occupancy
from kernel_gym.signals.resources import KernelResources, binary_resources, mangled_matches
from kernel_gym.signals.roofline import roofline, task_counts, task_signals
from kernel_gym.signals.structure import cuda_source_strings, structure_signals
from kernel_gym.signals.structure_cuda import kernels as cuda_kernels
from kernel_gym.signals.structure_cuda import strip_comments
from kernel_gym.signals.triton_resources import Launch, record_launches, triton_kernels

log = logging.getLogger(__name__)
__all__ = ["after_timing", "before_timing", "cuda_compile_signals", "record_launches", "resource_signals"]


def _part(out: dict[str, float], name: str, fn: Callable[[], dict[str, float]]) -> None:
    try:
        out.update(fn())
    except Exception as e:  # noqa: BLE001 - a signal we cannot compute is left out, never a verdict
        log.warning("signals: %s failed: %s", name, e)


def resource_signals(kernels: list[KernelResources], capability: tuple[int, int] = (9, 0)) -> dict[str, float]:
    """Aggregates over the solution's kernels, compiled for sm_`capability`: the most registers, shared memory and
    spill bytes of any kernel, and the occupancy of the least occupied kernel whose block size is known."""
    if not kernels:
        return {}
    sm = hardware.SM_LIMITS.get(capability, hardware.SmLimits())
    out = {"target_sm": float(capability[0] * 10 + capability[1]), "kernels_profiled": float(len(kernels)),
           "regs_max": float(max(k.regs for k in kernels)),
           "smem_max_bytes": float(max(k.smem + k.dynamic_smem for k in kernels)),
           "spill_bytes_max": float(max(k.spill_bytes for k in kernels))}
    occupied = [(occupancy(k.regs, k.threads, k.smem + k.dynamic_smem, sm), k) for k in kernels if (k.threads or 0) > 0]
    if occupied:
        occ, k = min(occupied, key=lambda pair: pair[0].occupancy)
        out.update(occupancy=round(occ.occupancy, 4), occupancy_block_threads=float(k.threads))
    shares = [k.vector_share for k in kernels if k.vector_share is not None]
    if shares:
        out["vector_mem_share"] = round(sum(shares) / len(shares), 4)
    return out


def _with_launch_config(found: list[KernelResources], cuda_source: str) -> list[KernelResources]:
    """The solution's kernels among `found` (by name), with threads and dynamic smem read from the source."""
    text = strip_comments(cuda_source)
    names = [k.name for k in cuda_kernels(text)]
    configs = launch_configs(text)
    out = []
    for r in found:
        name = next((n for n in names if mangled_matches(r.name, n)), None)
        if name is not None:
            threads, dynamic = configs.get(name, (None, 0))
            out.append(KernelResources(name, r.regs, r.smem, r.spill_bytes, threads=threads, dynamic_smem=dynamic))
    return out


def _cache_file(cuda_source: str, arch: str) -> Path:
    root = cache_dir("signals")
    root.mkdir(parents=True, exist_ok=True)
    return root / (hashlib.sha256(f"{arch}\0{cuda_source}".encode()).hexdigest() + ".json")


def cpu_cuda_kernels(cuda_source: str, workdir: Path, arch: str = "sm_90") -> list[KernelResources]:
    """Resources of the kernels in the nvcc check's cubin (`workdir/check.cubin`, written when the check compiled);
    when the check was a cache hit there is no cubin, and the figures come from this module's own cache."""
    cached = _cache_file(cuda_source, arch)
    cubin = workdir / "check.cubin"
    if cubin.exists():
        found = binary_resources(cubin)
        if found:
            cached.write_text(json.dumps([vars(k) for k in found]))
        return found
    if cached.exists():
        return [KernelResources(**d) for d in json.loads(cached.read_text())]
    return []


def cuda_compile_signals(cuda_source: str, code: str, workdir: Path) -> dict[str, float]:
    """CPU backend, CUDA solution that passed the nvcc check: structure + registers/smem/spills/occupancy (sm_90)."""
    out: dict[str, float] = {}
    _part(out, "structure", lambda: structure_signals(code, "cuda"))
    _part(out, "resources", lambda: resource_signals(
        _with_launch_config(cpu_cuda_kernels(cuda_source, workdir), cuda_source), hardware.DEFAULT.capability))
    return out


def cuda_raw_compile_signals(module: Any, code: str) -> dict[str, float]:
    """CPU backend, raw-CUDA solution that NVRTC compiled: structure + resources/occupancy from its cubin (sm_90)."""
    out: dict[str, float] = {}
    _part(out, "structure", lambda: structure_signals(code, "cuda_raw"))
    _part(out, "resources", lambda: resource_signals(_raw_kernels([module]), hardware.DEFAULT.capability))
    return out


def _raw_kernels(modules: list[Any]) -> list[KernelResources]:
    """Resources of the kernels in kernel_gym.cuda_raw modules' cubins, with their launch configs from the source."""
    found = []
    for m in modules:
        if m.cubin_path is None or not m.cubin_path.exists():
            continue
        for r in _with_launch_config(binary_resources(m.cubin_path), m.source):
            threads, dynamic = m.launch_configs.get(r.name, (r.threads, r.dynamic_smem))  # as launched on the GPU
            found.append(KernelResources(r.name, r.regs, r.smem, r.spill_bytes, threads=threads, dynamic_smem=dynamic))
    return found


def extension_files(*holders: Any) -> list[Path]:
    """Built extension libraries (`.so` outside site-packages) referenced by the candidate's module or model."""
    found = []
    for holder in holders:
        for value in list(vars(holder).values()) if hasattr(holder, "__dict__") else []:
            path = getattr(value, "__file__", None) if isinstance(value, types.ModuleType) else None
            if path and path.endswith(".so") and "-packages" not in path and Path(path) not in found:
                found.append(Path(path))
    return found


def _gpu_kernels(backend: str, code: str, launches: dict[int, Launch], holders: tuple[Any, ...],
                 capability: tuple[int, int]) -> list[KernelResources]:
    if backend in ("triton", "helion"):  # (Helion's kernels are Triton kernels, launched through Triton)
        return triton_kernels(launches, capability[0] * 10 + capability[1])
    if backend == "cuda_raw":
        from kernel_gym import cuda_raw

        return _raw_kernels(list(cuda_raw.COMPILED))
    if backend in ("cute_dsl", "tilelang"):  # what the launch hooks saw launched, from its cubins
        from kernel_gym.harness import dsl_launches
        from kernel_gym.signals.dsl_resources import dsl_kernels

        return dsl_kernels(list(dsl_launches.LAUNCHED.values()))
    found = [r for path in extension_files(*holders) for r in binary_resources(path)]
    return _with_launch_config(found, cuda_source_strings(code))


def before_timing(*, job: Any, device: torch.device, launches: dict[int, Launch], cand_module: Any,
                  cand_model: Any) -> dict[str, float]:
    """Structure and compile-time resources of a correct candidate. On cuda: the kernels it ran (CuTe DSL's and
    TileLang's: those their launch hooks saw), occupancy on this GPU; on cpu: Triton kernels compiled for sm_90.
    Runs before timing on purpose: recompiling a Triton kernel can run Python of the candidate's (code the
    generator calls), and the timing stage's checks must come after it."""
    out: dict[str, float] = {}
    _part(out, "structure", lambda: structure_signals(job.code, job.backend))
    if device.type == "cuda":
        capability = tuple(torch.cuda.get_device_capability(device))
        holders = (cand_module, cand_model, type(cand_model))
        _part(out, "resources", lambda: resource_signals(
            _gpu_kernels(job.backend, job.code, launches, holders, capability), capability))
    elif job.backend in ("triton", "helion"):
        _part(out, "resources", lambda: resource_signals(triton_kernels(launches), hardware.DEFAULT.capability))
    return out


def after_timing(*, job: Any, device: torch.device, ref_model: torch.nn.Module, inputs: list[Any],
                 runtime_ms: float, baseline_ms: float) -> dict[str, float]:
    """The task's bytes and FLOPs (the reference run once under FlopCounterMode) and, on a GPU in
    `hardware.SPECS`, the roofline signals of the timed candidate. Runs no candidate code."""
    try:
        task_bytes, task_flops = task_counts(ref_model, inputs)
    except Exception as e:  # noqa: BLE001
        log.warning("signals: counting the task's bytes and FLOPs failed: %s", e)
        return {}
    out = task_signals(task_bytes, task_flops)
    spec = hardware.current_spec() if device.type == "cuda" else None
    if spec is not None:
        _part(out, "roofline", lambda: roofline(task_bytes, task_flops, runtime_ms, baseline_ms, spec,
                                                dtype=job.dtype, allow_precision=job.allow_precision))
    return out
