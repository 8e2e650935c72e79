"""What a GPU can hold and do: the occupancy limits of its SM and its peak bandwidth and FLOP rates.

Occupancy figures are NVIDIA's (CUDA C Programming Guide, "Compute Capabilities" table; the occupancy
calculator's allocation rules, `cuda_occupancy.h`). Peaks are configured, not measured at run time:
`bandwidth` is the *achievable* device-to-device copy bandwidth measured on an H200 (4.3 TB/s, reads plus
writes; the datasheet's 4.8 TB/s is not reachable), FLOP rates are dense datasheet figures. Change them with
`dataclasses.replace(spec, ...)` or add a spec to `SPECS`. This is the one place GPU peaks are kept: the task
baselines' roofline estimate (`kernel_gym.tasks.roofline`) reads `H200` from here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class SmLimits:
    """Per-SM resources of one compute capability, as the occupancy calculator uses them."""

    regs_per_sm: int = 65536
    """32-bit registers in one SM (the register file), split evenly over `sub_partitions`."""
    max_regs_per_thread: int = 255
    regs_per_block: int = 65536
    """Most registers one block may hold."""
    reg_alloc_unit: int = 256
    """Registers are given to a warp in multiples of this."""
    sub_partitions: int = 4
    """Warp schedulers per SM; each owns a quarter of the register file."""
    smem_per_sm: int = 233472
    """Shared memory of one SM at the largest carve-out (sm_90: 228 KB)."""
    smem_per_block: int = 232448
    """Most shared memory one block may use (sm_90: 227 KB, opt-in above 48 KB)."""
    smem_reserved_per_block: int = 1024
    """Shared memory the system reserves for every resident block (sm_80 and later)."""
    smem_alloc_unit: int = 128
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    max_threads_per_block: int = 1024
    warp_size: int = 32

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


SM_LIMITS: dict[tuple[int, int], SmLimits] = {
    (8, 0): SmLimits(smem_per_sm=167936, smem_per_block=166912),  # A100: 164 KB / 163 KB
    (8, 6): SmLimits(smem_per_sm=102400, smem_per_block=101376, max_threads_per_sm=1536, max_blocks_per_sm=16),
    (8, 9): SmLimits(smem_per_sm=102400, smem_per_block=101376, max_threads_per_sm=1536, max_blocks_per_sm=24),
    (9, 0): SmLimits(),  # H100, H200
}


@dataclass(frozen=True, kw_only=True)
class GpuSpec:
    """A GPU for the signals: its SM limits and its peaks (bytes/s, FLOP/s by dtype)."""

    name: str
    capability: tuple[int, int]
    sms: int
    bandwidth: float
    """Achievable DRAM bandwidth in bytes/s (reads + writes), the roofline's memory roof."""
    flops: dict[str, float] = field(default_factory=dict)
    """Dense peak FLOP/s by the precision the task computes in: float32 (CUDA cores, TF32 off), tf32,
    float16, bfloat16, float64."""
    bandwidth_source: str = "configured"

    @property
    def sm(self) -> SmLimits:
        return SM_LIMITS.get(self.capability, SmLimits())

    def peak_flops(self, dtype: str, allow_precision: bool = False) -> float:
        """The FLOP roof for a task of `dtype`; an fp32 task that may use TF32 gets the TF32 tensor-core roof."""
        if dtype == "float32" and allow_precision:
            dtype = "tf32"
        return self.flops.get(dtype, self.flops["float32"])


_HOPPER_FLOPS = {"float32": 60e12, "tf32": 494e12, "float16": 989e12, "bfloat16": 989e12, "float64": 67e12}

H200 = GpuSpec(name="H200", capability=(9, 0), sms=132, bandwidth=4.3e12, flops=dict(_HOPPER_FLOPS),
               bandwidth_source="measured: torch device-to-device copy on an H200, 2026-10-28")
H100 = GpuSpec(name="H100", capability=(9, 0), sms=132, bandwidth=3.0e12, flops=dict(_HOPPER_FLOPS),
               bandwidth_source="configured: ~90% of the SXM datasheet's 3.35 TB/s (not measured here)")
SPECS: dict[str, GpuSpec] = {"H200": H200, "H100": H100}
DEFAULT = H200
"""The target of CPU-side compiles (sm_90) and the spec used when a device is not recognised."""


def spec_for_name(device_name: str) -> GpuSpec | None:
    """The spec whose name appears in a device name ("NVIDIA H200" -> H200), or None."""
    upper = device_name.upper()
    for name, spec in SPECS.items():
        if name in upper:
            return spec
    return None


def current_spec() -> GpuSpec | None:
    """The spec of the current CUDA device, or None when there is none or it is not in `SPECS`."""
    import torch

    if not torch.cuda.is_available():
        return None
    return spec_for_name(torch.cuda.get_device_name())


def measure_copy_bandwidth(n_bytes: int = 1 << 30, repeats: int = 10) -> float:
    """Device-to-device copy bandwidth of the current GPU in bytes/s (read + write), median of `repeats`.

    The way `H200.bandwidth` was obtained; for configuring a new spec, not called during evaluation.
    """
    import statistics

    import torch

    src = torch.empty(n_bytes // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return 2 * n_bytes / statistics.median(times)
