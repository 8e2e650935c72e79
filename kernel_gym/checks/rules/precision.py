"""Rule ``precision``: no computing below the task's float32 dtype contract."""

from __future__ import annotations

import ast
import re

from .. import cpp
from ..context import Context
from ..registry import rule, violation

NAME = "precision"
LOW = {  # resolved name -> precision class
    **{f"torch.{n}": "fp16" for n in ("float16", "half", "complex32", "chalf")},
    "torch.bfloat16": "bf16", "numpy.float16": "fp16", "numpy.half": "fp16",
    **{f"triton.language.{n}": "fp16" for n in ("float16", "half")},
    "triton.language.bfloat16": "bf16",
    **{f"torch.float8_{n}": "fp8" for n in ("e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e8m0fnu")},
    **{f"triton.language.float8{n}": "fp8" for n in ("e4nv", "e5", "e4b15", "e4b8", "e5b16")},
    # CuTe DSL's numeric types (cutlass.X, also re-exported as cute.X) and TileLang's dtypes (T.X)
    **{f"{m}.{n}": c for m in ("cutlass", "cutlass.cute") for n, c in (
        ("Float16", "fp16"), ("BFloat16", "bf16"), ("TFloat32", "tf32"), ("Float8E4M3FN", "fp8"),
        ("Float8E5M2", "fp8"), ("Float8E4M3", "fp8"))},
    **{f"tilelang.language.{n}": c for n, c in (
        ("float16", "fp16"), ("half", "fp16"), ("bfloat16", "bf16"), ("tfloat32", "tf32"), ("float8_e4m3", "fp8"),
        ("float8_e5m2", "fp8"), ("float8_e4m3fn", "fp8"))},
}
FP32 = frozenset({"torch.float32", "torch.float", "triton.language.float32", "numpy.float32", "cutlass.Float32",
                  "cutlass.cute.Float32", "tilelang.language.float32"})
# TileLang names dtypes by string too (`dtype="float16"`, `T.Tensor((M, N), "bfloat16")`)
TILELANG_LOW_STRINGS = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float8_e4m3": "fp8",
                        "float8_e5m2": "fp8", "float8_e4m3fn": "fp8"}
LOW_METHODS = {"half": "fp16", "bfloat16": "bf16"}
PREC_ARGS = ("allow_tf32", "input_precision", "precision", "dot_precision")  # dot_precision: Helion
TF32_STRINGS = {"tf32", "tf32x3", "medium", "high", "bf16", "bf16x3", "bf16x6"}
MIXED = ("torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
         "torch.set_float32_matmul_precision", "torch.set_autocast_")
CPP_LOW = re.compile(r"\b(?:__half2?|half2|__nv_bfloat162?|nv_bfloat162?|__float2half\w*|__half2float|"
                     r"__float2bfloat16\w*|__floats2half2\w*|__hadd2?|__hmul2?|__hfma2?|at::Half|c10::Half|"
                     r"at::BFloat16|c10::BFloat16|k(?:Half|BFloat16|Float16)|precision::tf32|__float_to_tf32|"
                     r"CUBLAS_COMPUTE_32F_FAST_\w+|CUBLAS_TF32_TENSOR_OP_MATH|CUBLAS_TENSOR_OP_MATH|"
                     r"setAllowTF32\w*|allow_tf32|CUDA_R_16[FB]|__nv_fp8\w*|mma\.sync[\w.]*\.(?:f16|bf16|tf32)"
                     r"|cvt\.rna\.tf32\w*|\.half\s*\(|\.bfloat16\s*\()")
FIX = ("The task is float32: compute in float32 (fp32 loads, fp32 accumulation, `tl.dot(..., "
       "input_precision=\"ieee\")`). Lower precision is not allowed unless the environment enables it.")


def _dtype_classes(ctx: Context, e: ast.AST) -> set[str] | None:
    """Classes of a dtype constant or a tuple of them (``torch.float16`` -> {"fp16"}); None otherwise."""
    elts = e.elts if isinstance(e, (ast.Tuple, ast.List, ast.Set)) else [e]
    names = [ctx.resolve(x) or "" for x in elts]
    if not names or not all(n in LOW or n in FP32 for n in names):
        return None
    return {LOW.get(n, "fp32") for n in names}


def _guard(ctx: Context, test: ast.AST, positive: bool) -> set[str]:
    """Dtype classes that ``test`` proves the input has (positive) or has not (negative), from
    comparisons like ``x.dtype == torch.float16`` / ``x.dtype not in (torch.half, torch.bfloat16)``."""
    ops = (ast.Eq, ast.Is, ast.In) if positive else (ast.NotEq, ast.IsNot, ast.NotIn)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ops):
        left, right = _dtype_classes(ctx, test.left), _dtype_classes(ctx, test.comparators[0])
        if (left is None) != (right is None):  # exactly one side is a dtype constant
            return left or right or set()
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return set().union(*(_guard(ctx, v, positive) for v in test.values))
    if isinstance(test, ast.BoolOp) and positive:  # Or: every alternative must be a guard
        parts = [_guard(ctx, v, positive) for v in test.values]
        return set().union(*parts) if all(parts) else set()
    return set()


def _allowed(ctx: Context, node: ast.AST, cls: str) -> bool:
    """Is this low-precision reference a dtype check, a dtype table, or on a branch that runs only
    for inputs that are not float32?"""
    child, pure = node, True
    while child in ctx.parents:
        p = ctx.parents[child]
        if pure and isinstance(p, ast.Compare):
            return True
        if pure and isinstance(p, (ast.Tuple, ast.List, ast.Set)) and _dtype_classes(ctx, p) and len(p.elts) > 1:
            return True
        if isinstance(p, ast.Dict) and pure:
            if child in p.keys:
                return True
            key = p.keys[p.values.index(child)] if child in p.values else None
            return key is not None and LOW.get(ctx.resolve(key) or "") == cls
        if isinstance(p, (ast.If, ast.IfExp)) and child is not p.test:
            body = p.body if isinstance(p.body, list) else [p.body]
            if child in body:
                if cls in _guard(ctx, p.test, True) or "fp32" in _guard(ctx, p.test, False):
                    return True
            elif isinstance(p.test, ast.Compare) and (  # else-branch: only a single comparison is negated
                    cls in _guard(ctx, p.test, False) or "fp32" in _guard(ctx, p.test, True)):
                return True
        pure = pure and isinstance(p, (ast.Tuple, ast.List, ast.Set))
        child = p
    return False


@rule(NAME)
def check(ctx: Context):
    """On a float32 task (unless precision drops are allowed), nothing in the solution, kernels
    included, computes in lower precision: no float16/bfloat16/float8 dtypes (``torch.float16``,
    ``tl.bfloat16``, ``.half()``, ``.to(tl.float16)``, CuTe DSL's ``cutlass.BFloat16``/``cutlass.TFloat32``,
    TileLang's ``T.float16`` or ``"float16"``), no TF32 (``input_precision="tf32"``/``"tf32x3"``,
    ``allow_tf32=True``, ``torch.backends.*.allow_tf32``, ``set_float32_matmul_precision`` other than
    "highest"), no autocast; in C++ sources no ``__half``/``half2``/``__nv_bfloat16``/``__float2half``,
    fp16/tf32 cuBLAS modes or f16/tf32 ``mma``. Dtype checks (``x.dtype == torch.float16``) and
    branches taken only for low-precision inputs are allowed."""
    if ctx.allow_precision or ctx.task_dtype.lower().replace("torch.", "") not in ("float32", "fp32", "float"):
        return
    for node in ast.walk(ctx.tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            r = ctx.resolve(node)
            if r in LOW and not _allowed(ctx, node, LOW[r]):
                yield violation(NAME, node, f"`{r}` lowers precision below the task's float32. {FIX}")
            elif r and r.startswith(MIXED):
                call = ctx.parents.get(node)
                args = call.args if isinstance(call, ast.Call) else []
                if not (args and isinstance(args[0], ast.Constant) and args[0].value == "highest"):
                    yield violation(NAME, node, f"`{r}` enables reduced-precision math. {FIX}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in LOW_METHODS and not ctx.resolve(node.func) \
                and not _allowed(ctx, node, LOW_METHODS[node.func.attr]):
            yield violation(NAME, node, f"`.{node.func.attr}()` casts to {LOW_METHODS[node.func.attr]}. {FIX}")
        elif isinstance(node, ast.keyword) and node.arg in PREC_ARGS \
                and isinstance(node.value, ast.Constant) and (
                    node.value.value is True or node.value.value in TF32_STRINGS):
            yield violation(NAME, node.value, f"`{node.arg}={node.value.value!r}` uses TF32/reduced "
                            f"precision. {FIX}")
        elif isinstance(node, ast.Constant) and (ctx.dsl.tl_jit or ctx.dsl.tl_prims) \
                and isinstance(node.value, str) and node.value in TILELANG_LOW_STRINGS \
                and not _allowed(ctx, node, TILELANG_LOW_STRINGS[node.value]):
            yield violation(NAME, node, f"the TileLang dtype {node.value!r} lowers precision below the task's float32. "
                            f"{FIX}")
        elif isinstance(node, ast.Constant) and node.value in ("tf32", "tf32x3") and not (
                isinstance(ctx.parents.get(node), ast.keyword) and ctx.parents[node].arg in PREC_ARGS) \
                and not isinstance(ctx.parents.get(node), ast.Compare):
            yield violation(NAME, node, f"the string {node.value!r} selects TF32 precision. {FIX}")
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                r = ctx.resolve(t) or ""
                v = node.value
                if r.startswith("torch.") and ("tf32" in r or "reduced_precision" in r or "fp32_precision" in r) \
                        and not (isinstance(v, ast.Constant) and v.value in (False, "ieee", "highest")):
                    yield violation(NAME, node, f"setting `{r}` enables TF32/reduced precision. {FIX}")
    for text, first in ctx.cpp:
        for hit, line in cpp.search(CPP_LOW, text, first, keep_strings=True):
            yield violation(NAME, line, f"`{hit.strip()}` in the C++ source is half/bfloat16/TF32 math. {FIX}")
