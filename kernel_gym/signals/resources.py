"""Compile-time resources of each kernel: registers, shared memory and spills, read from NVIDIA's tools.

Two readers, one record (`KernelResources`):
- `ptxas -v` on PTX (Triton's PTX on the CPU backend): "Used 64 registers, ... 1024 bytes smem" and
  "N bytes stack frame, N bytes spill stores, N bytes spill loads" per entry function.
- `cuobjdump --dump-resource-usage` on a cubin or a host binary with embedded device code (a CUDA solution's
  compile-check cubin on the CPU backend, its built extension `.so` on the GPU): "REG:10 STACK:0 SHARED:1024 ..."
  per function. cuobjdump's SHARED includes the 1 KB the system reserves for a block whenever the kernel needs it
  (barriers, stack); it is subtracted, so `smem` is the kernel's own static shared memory (within 1 KB).

`spill_bytes` is the local memory a thread uses (ptxas' stack frame, cuobjdump's STACK, Triton's
`n_spills * 4` on the GPU): register spills and local arrays that did not fit in registers. Dynamic shared memory
of a CUDA kernel is a launch argument and is not in the binary (see `launch_config`). The tools come from the CUDA
toolkit (`$CUDA_HOME/bin`, PATH) or, failing that, the copies Triton ships in `triton/backends/nvidia/bin`.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

TOOL_TIMEOUT_S = 60.0
RESERVED_SMEM = 1024


@dataclass(frozen=True)
class KernelResources:
    """Per-thread registers, per-block static shared memory and per-thread local (spill) bytes of one kernel."""

    name: str
    regs: int
    smem: int = 0
    spill_bytes: int = 0
    threads: int | None = None
    """Threads per block when known (Triton: num_warps * 32; CUDA: __launch_bounds__ or the launch site)."""
    dynamic_smem: int = 0
    """Dynamic shared memory per block when known (CUDA: the launch's third argument)."""
    vector_share: float | None = None
    """Share of the global loads/stores in its PTX that are vector accesses (.v2/.v4/.v8); Triton only."""


def find_tool(name: str) -> str | None:
    """`ptxas` or `cuobjdump`: from $CUDA_HOME/bin, then PATH, then Triton's bundled copy."""
    cuda_home = os.environ.get("CUDA_HOME")
    candidates = [Path(cuda_home) / "bin" / name] if cuda_home else []
    on_path = shutil.which(name)
    if on_path:
        candidates.append(Path(on_path))
    try:
        import triton

        candidates.append(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)
    except ImportError:
        pass
    return next((str(p) for p in candidates if p.is_file() and os.access(p, os.X_OK)), None)


_ENTRY = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas_log(text: str) -> list[KernelResources]:
    """Resources per entry function from the `ptxas -v` log (stderr of ptxas or of `nvcc -Xptxas -v`)."""
    found: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        if m := _ENTRY.search(line):
            current = m.group(1)
            found.setdefault(current, {"regs": 0, "smem": 0, "spill_bytes": 0})
        elif current and (m := _FRAME.search(line)):
            found[current]["spill_bytes"] = max(int(m.group(1)), int(m.group(2)))
        elif current and (m := _USED.search(line)):
            found[current]["regs"] = int(m.group(1))
            found[current]["smem"] = int(m.group(2) or 0)
    return [KernelResources(name, **v) for name, v in found.items()]


_FUNCTION = re.compile(r"Function ([\w$.]+):\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")


def parse_cuobjdump(text: str) -> list[KernelResources]:
    """Resources per function from `cuobjdump --dump-resource-usage` (the first entry of a repeated name wins:
    a fat binary may hold one cubin per architecture)."""
    found: dict[str, KernelResources] = {}
    for name, reg, stack, shared, local in _FUNCTION.findall(text):
        smem = int(shared) - RESERVED_SMEM if int(shared) >= RESERVED_SMEM else int(shared)
        found.setdefault(name, KernelResources(name, int(reg), smem, max(int(stack), int(local))))
    return list(found.values())


def _run(cmd: list[str]) -> subprocess.CompletedProcess | None:
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.warning("%s failed: %s", cmd[0], e)
        return None
    if run.returncode != 0:
        log.warning("%s exited %d: %s", cmd[0], run.returncode, (run.stderr or run.stdout)[-500:])
        return None
    return run


_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.M)


def ptx_resources(ptx: str) -> list[KernelResources]:
    """Assemble PTX with `ptxas -v` for the architecture its `.target` names; [] when ptxas is missing or fails."""
    ptxas = find_tool("ptxas")
    target = _TARGET.search(ptx)
    if ptxas is None or target is None:
        return []
    with tempfile.TemporaryDirectory(prefix="kg_ptxas_") as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        run = _run([ptxas, "-v", f"-arch={target.group(1)}", str(src), "-o", str(Path(tmp) / "kernel.cubin")])
    return parse_ptxas_log(run.stderr + run.stdout) if run else []


_GLOBAL_ACCESS = re.compile(r"\b(?:ld|st)\.global((?:\.[\w:]+)*)")


def vector_share(ptx: str) -> float | None:
    """Share of global memory instructions (ld.global/st.global) in PTX that move vectors; None when there are none."""
    kinds = [".v2" in m or ".v4" in m or ".v8" in m for m in _GLOBAL_ACCESS.findall(ptx)]
    return sum(kinds) / len(kinds) if kinds else None


def binary_resources(path: Path | str) -> list[KernelResources]:
    """Resources of every kernel in a cubin or a host binary with device code; [] without cuobjdump."""
    cuobjdump = find_tool("cuobjdump")
    if cuobjdump is None:
        return []
    run = _run([cuobjdump, "--dump-resource-usage", str(path)])
    return parse_cuobjdump(run.stdout) if run else []


def mangled_matches(symbol: str, kernel: str) -> bool:
    """Whether a (possibly Itanium-mangled) symbol names the kernel `kernel`: `kernel` itself (extern "C") or
    `_Z<len>kernel...`, also inside namespaces (`_ZN2ns<len>kernel...`)."""
    if symbol == kernel:
        return True
    return symbol.startswith("_Z") and f"{len(kernel)}{kernel}" in symbol
