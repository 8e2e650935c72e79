"""Hints for CuTe DSL and TileLang solutions (backend="cute_dsl" / "tilelang"). Registered in
`kernel_gym.feedback.hints.HINTS`.

- `dsl_missing`: the runners' Python lacks the package (the machine's install, not the solution, is at fault).
- `cute_dsl_compile`: a CuTe DSL error while a @cute.jit function was traced or compiled: what the DSL accepts.
- `tilelang_compile`: a TileLang/TVM error while a prim_func was parsed, lowered or built: what TileLang accepts.
- `tilelang_tf32_gemm`: a WRONG OUTPUT on a float32 task from TileLang code with `T.gemm`: on float32 tiles it runs
  on TF32 tensor cores.
"""

from __future__ import annotations

import re

from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.feedback.hints import HintContext, hint

_MISSING = {"cutlass": ("CuTe DSL", "cute_dsl"), "tilelang": ("TileLang", "tilelang")}
_CUTE_ERROR = re.compile(r"\bDSL\w*Error\b|cutlass\.base_dsl|cutlass\._mlir")
_TILELANG_ERROR = re.compile(r"\btvm\.error\.\w+|\bTVMError\b|\btilelang\.|\bInternalError\b")
_T_GEMM = re.compile(r"\bT\.gemm\s*\(|\btilelang\.language\.gemm\s*\(")


@hint("dsl_missing")
def _dsl_missing(result: EvalResult, ctx: HintContext) -> str | None:
    if result.outcome is not Outcome.COMPILE_ERROR:
        return None
    for module, (name, extra) in _MISSING.items():
        if f"No module named '{module}'" in (result.message or ""):
            return (f"{name} is not installed where this environment runs solutions (`pip install "
                    f"'kernel-gym[{extra}]'`); this is no fault of the solution.")
    return None


@hint("cute_dsl_compile")
def _cute_dsl_compile(result: EvalResult, ctx: HintContext) -> str | None:
    if result.outcome is not Outcome.COMPILE_ERROR or not _CUTE_ERROR.search(result.message or ""):
        return None
    return ("CuTe DSL traces each @cute.jit function at its first call and compiles it with its @cute.kernel "
            "functions: annotate tensor parameters `cute.Tensor` and compile-time values `cutlass.Constexpr`, pass "
            "torch tensors through `cutlass.cute.runtime.from_dlpack(t)`, loop with `range(...)`/`cutlass.range(...)` "
            "(`cutlass.range_constexpr` to unroll) and branch on compile-time values with `cutlass.const_expr(...)`; "
            "inside a kernel use CuTe operations (`cute.arch.thread_idx()`, indexing, `.load()`/`.store()`, "
            "`cute.where`, `cute.math.*`), never torch.")


@hint("tilelang_compile")
def _tilelang_compile(result: EvalResult, ctx: HintContext) -> str | None:
    if result.outcome is not Outcome.COMPILE_ERROR or not ctx.code or "tilelang" not in ctx.code \
            or not _TILELANG_ERROR.search(result.message or ""):
        return None
    return ("TileLang parses a @T.prim_func into TVM's IR: its shapes are Python ints (or `T.dynamic`/`T.symbolic` "
            "names), its dtypes strings or `T.float32`; the body is one `with T.Kernel(grid..., threads=N) as (bx, "
            "...)` block whose buffers come from `T.alloc_shared`/`T.alloc_fragment`, moved with `T.copy` and computed "
            "in `T.Parallel`/`T.serial`/`T.Pipelined` loops, `T.gemm` and `T.reduce_*`; no torch inside it.")


@hint("tilelang_tf32_gemm")
def _tilelang_tf32_gemm(result: EvalResult, ctx: HintContext) -> str | None:
    if result.outcome is not Outcome.MISMATCH or ctx.dtype != "float32" or ctx.allow_precision or not ctx.code \
            or "tilelang" not in ctx.code or not _T_GEMM.search(ctx.code):
        return None
    return ("TileLang's `T.gemm` on float32 tiles runs on TF32 tensor cores (about 10 mantissa bits, errors near "
            "1e-3), outside this float32 task's tolerance: accumulate float32 products yourself (a `T.serial` loop "
            "over K of `T.Parallel` multiply-adds into a float32 fragment), or run the task at precision bf16/fp16.")
