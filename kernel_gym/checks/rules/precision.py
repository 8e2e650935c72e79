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
}
LOW_METHODS = {"half": "fp16", "bfloat16": "bf16"}
PREC_ARGS = ("allow_tf32", "input_precision", "precision")
TF32_STRINGS = {"tf32", "tf32x3", "medium", "high", "bf16", "bf16x3", "bf16x6"}
MIXED = ("torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
         "torch.set_float32_matmul_precision", "torch.set_autocast_")
CPP_LOW = re.compile(r"\b(?:__half2?|half2?|__nv_bfloat162?|nv_bfloat162?|__float2half\w*|__half2float|"
                     r"__float2bfloat16\w*|__floats2half2\w*|__hadd2?|__hmul2?|__hfma2?|at::Half|c10::Half|"
                     r"at::BFloat16|c10::BFloat16|k(?:Half|BFloat16|Float16)|precision::tf32|__float_to_tf32|"
                     r"CUBLAS_COMPUTE_32F_FAST_\w+|CUBLAS_TF32_TENSOR_OP_MATH|CUBLAS_TENSOR_OP_MATH|"
                     r"setAllowTF32\w*|allow_tf32|CUDA_R_16[FB]|__nv_fp8\w*|mma\.sync[\w.]*\.(?:f16|bf16|tf32)"
                     r"|cvt\.rna\.tf32\w*|\.half\s*\(|\.bfloat16\s*\()")
FIX = ("The task is float32: compute in float32 (fp32 loads, fp32 accumulation, `tl.dot(..., "
       "input_precision=\"ieee\")`). Lower precision is not allowed unless the environment enables it.")


def _classes(ctx: Context, expr: ast.AST, ops: tuple) -> set[str]:
    """Precision classes compared in ``expr`` with one of ``ops`` (e.g. ``x.dtype == torch.float16``)."""
    out: set[str] = set()
    for n in ast.walk(expr):
        if isinstance(n, ast.Compare) and all(isinstance(o, ops) for o in n.ops):
            for part in [n.left, *n.comparators]:
                out |= {LOW[r] for s in ast.walk(part) if (r := ctx.resolve(s)) in LOW}
    return out


def _allowed(ctx: Context, node: ast.AST, cls: str) -> bool:
    """Is this low-precision reference a dtype check or a branch taken only for low-precision inputs?"""
    child = node
    while child in ctx.parents:
        p = ctx.parents[child]
        if isinstance(p, ast.Compare):
            return True
        if isinstance(p, (ast.Tuple, ast.List, ast.Set)) and all(
                (ctx.resolve(e) or "").startswith(("torch.", "triton.language.")) for e in p.elts) \
                and len(p.elts) > 1:
            return True
        if isinstance(p, ast.Dict):
            if child in p.keys:
                return True
            key = p.keys[p.values.index(child)] if child in p.values else None
            return key is not None and LOW.get(ctx.resolve(key) or "") == cls
        if isinstance(p, (ast.If, ast.IfExp)):
            body = p.body if isinstance(p.body, list) else [p.body]
            if child in body and cls in _classes(ctx, p.test, (ast.Eq, ast.Is, ast.In)):
                return True
            orelse = p.orelse if isinstance(p.orelse, list) else [p.orelse]
            if child in orelse and cls in _classes(ctx, p.test, (ast.NotEq, ast.IsNot, ast.NotIn)):
                return True
        child = p
    return False


@rule(NAME)
def check(ctx: Context):
    """On a float32 task (unless precision drops are allowed), nothing in the solution, kernels
    included, computes in lower precision: no float16/bfloat16/float8 dtypes (``torch.float16``,
    ``tl.bfloat16``, ``.half()``, ``.to(tl.float16)``), no TF32 (``input_precision="tf32"``/``"tf32x3"``,
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
        for hit, line in cpp.search(CPP_LOW, text, first):
            yield violation(NAME, line, f"`{hit.strip()}` in the C++ source is half/bfloat16/TF32 math. {FIX}")
