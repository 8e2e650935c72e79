"""The languages a solution may write its kernels in (`backend=`), and which of them need a GPU to run at all.

One table for every place that accepts a backend name (`gym.make`, `EvalJob`, `kernel-gym eval/lint`, auto
detection). docs/backends.md says what each supports. Imports nothing heavy: the CLI parser reads it.
"""

from __future__ import annotations

NAMES = ("triton", "cuda", "cuda_raw", "helion", "cute_dsl", "tilelang")
"""Every backend a solution can be written for."""
CHOICES = ("auto", *NAMES)
"""What `backend=` accepts: a backend, or "auto" (detected from each response's code)."""

# Backends whose kernels have no CPU execution at all (no interpreter as Triton has): their packages compile for an
# NVIDIA GPU only (CuTe DSL through its MLIR pipeline to cubin, TileLang through TVM to CUDA C++ and nvcc).
GPU_ONLY = {
    "cute_dsl": "CuTe DSL (`@cute.kernel`/`@cute.jit`, package nvidia-cutlass-dsl)",
    "tilelang": "TileLang (`@T.prim_func`/`tilelang.jit`, package tilelang)",
}


def gpu_only(backend: str | None) -> bool:
    """Does a solution of this backend need a GPU to run (no CPU backend for it)?"""
    return backend in GPU_ONLY


def cpu_refusal(backend: str) -> str:
    """One line: why `backend` cannot be evaluated on device="cpu", and what to do instead."""
    return (f"backend={backend!r} needs an NVIDIA GPU: {GPU_ONLY[backend]} kernels compile and run only on CUDA "
            "devices, and the CPU backend has no interpreter for them; use device='cuda' on a GPU machine (or a "
            "remote GPU evaluator, docs/distributed.md), or a backend the CPU backend runs (triton, helion)")
