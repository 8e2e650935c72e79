"""The compact profile the agent sees in its feedback, made from the flat signals dict (see docs/signals.md).

    Profile: 1 kernel, 64 registers/thread, 0 B shared memory, no spills, occupancy 50% (256 threads/block);
    3.14 TB/s = 73% of the 4.30 TB/s peak, 0.0 TFLOP/s; 73% of the roofline bound (0.251 ms); own kernels 100%
    of GPU time.
    Code notes: 2 strided (uncoalesced) global accesses.
"""

from __future__ import annotations

from collections.abc import Mapping


def _bytes(n: float) -> str:
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n:.0f} B"


def _resources(s: Mapping[str, float]) -> list[str]:
    if "regs_max" not in s:
        return []
    n = int(s.get("kernels_profiled", 1))
    parts = [f"{n} kernel{'s' if n != 1 else ''}", f"{s['regs_max']:.0f} registers/thread",
             f"{_bytes(s.get('smem_max_bytes', 0))} shared memory",
             f"{_bytes(s['spill_bytes_max'])} spilled/thread" if s.get("spill_bytes_max") else "no spills"]
    if "occupancy" in s:
        parts.append(f"occupancy {100 * s['occupancy']:.0f}% ({s.get('occupancy_block_threads', 0):.0f} "
                     "threads/block)")
    if n > 1:
        parts[1] = "max " + parts[1]
    return parts


def _roofline(s: Mapping[str, float]) -> list[str]:
    if "achieved_bandwidth" not in s:
        return []
    parts = [f"{s['achieved_bandwidth'] / 1e12:.2f} TB/s = {100 * s['bandwidth_util']:.0f}% of the "
             f"{s['peak_bandwidth'] / 1e12:.2f} TB/s peak"]
    if s.get("task_flops"):
        parts.append(f"{s['achieved_flops'] / 1e12:.1f} TFLOP/s = {100 * s['flops_util']:.0f}% of the "
                     f"{s['peak_flops'] / 1e12:.0f} TFLOP/s peak")
    parts.append(f"{100 * s['roofline_util']:.0f}% of the roofline bound ({s['roofline_min_ms']:.3g} ms)")
    return parts


def _notes(s: Mapping[str, float]) -> list[str]:
    notes = []
    if s.get("struct_uncoalesced"):
        n = int(s["struct_uncoalesced"])
        notes.append(f"{n} strided (likely uncoalesced) global access{'es' if n != 1 else ''}")
    if s.get("struct_sync_in_branch"):
        notes.append("__syncthreads() inside a branch on the thread index (threads may not all reach it)")
    if s.get("spill_bytes_max"):
        notes.append("register spills to local memory")
    return notes


def profile_text(signals: Mapping[str, float]) -> str:
    """One or two lines ("Profile: ...", "Code notes: ..."); "" when no signal worth showing was measured."""
    first = _resources(signals)
    rest = _roofline(signals)
    if "own_kernel_time_share" in signals and (first or rest):
        rest.append(f"own kernels {100 * signals['own_kernel_time_share']:.0f}% of GPU time")
    lines = []
    if first or rest:
        head = f"Profile (sm_{signals['target_sm']:.0f})" if "target_sm" in signals and first else "Profile"
        lines.append(f"{head}: " + "; ".join(p for p in (", ".join(first), ", ".join(rest)) if p) + ".")
    notes = _notes(signals)
    if notes:
        lines.append("Code notes: " + "; ".join(notes) + ".")
    return "\n".join(lines)
