"""Structural signals of a solution's code: which GPU programming techniques it uses, read without running it.

`structure_signals(code, backend)` -> {"struct_shared_memory": 1.0, ...}: CUDA solutions are read from their
CUDA source strings (`structure_cuda`), Triton solutions from their `@triton.jit` functions
(`structure_triton`). The definitions and limits of each signal are in docs/signals.md.
"""

from __future__ import annotations

import ast

from kernel_gym.pyast import parse_source
from kernel_gym.signals.structure_cuda import cuda_structure
from kernel_gym.signals.structure_triton import triton_structure

_CUDA_MARKERS = ("__global__", "__device__", "__shared__", "#include")


def cuda_source_strings(code: str) -> str:
    """The CUDA source held in a Python solution's string literals (those that look like CUDA), joined; the whole
    text when it does not parse as Python (it is then taken to be CUDA source itself)."""
    try:
        tree = parse_source(code)
    except SyntaxError:
        return code
    parts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and any(m in n.value for m in _CUDA_MARKERS)]
    return "\n".join(parts)


def structure_signals(code: str, backend: str) -> dict[str, float]:
    """struct_* signals of a solution: `backend` "cuda" reads its CUDA strings, "triton" its jit functions."""
    if backend in ("cuda", "cuda_raw"):
        source = cuda_source_strings(code)
        return cuda_structure(source) if source.strip() else {}
    return triton_structure(code)
