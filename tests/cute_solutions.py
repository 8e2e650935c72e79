"""A CuTe DSL solution of tests/cute_dsl compiled without a GPU (CuTe traces, lowers and builds a cubin for the
architecture in CUTE_DSL_ARCH): the static-check tests' and the resource-signal tests' one way to get its compiled
function."""

from __future__ import annotations

import importlib.util
import pathlib


def compile_solution(path: pathlib.Path):
    """`path`'s kernel entry compiled on small inputs of the shapes it takes: `gemm` (a bf16 matmul), `column_sum`,
    else `relu` (or an attack's `copy`)."""
    import cuda.bindings.driver as cuda
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack

    spec = importlib.util.spec_from_file_location(f"cute_{path.parent.name}_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if "matmul" in path.name:
        a, b, c = torch.randn(50, 37).bfloat16(), torch.randn(37, 45).bfloat16(), torch.empty(50, 45).bfloat16()
        args, fn = (from_dlpack(a), from_dlpack(b), from_dlpack(c), 50, 45, 37), mod.gemm
    elif "sum" in path.name:
        x, y = torch.randn(3 * 77 * 45), torch.empty(3 * 45)
        args, fn = (from_dlpack(x), from_dlpack(y), 3 * 45, 77, 45), mod.column_sum
    else:
        x = torch.randn(1001)
        args, fn = (from_dlpack(x), from_dlpack(torch.empty_like(x)), 1001), getattr(mod, "relu", None) or mod.copy
    return cute.compile(fn, *args, cuda.CUstream(0))
