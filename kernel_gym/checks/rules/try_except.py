"""Rule ``try_except``: no silent fallback when an own kernel fails."""

from __future__ import annotations

import ast

from ..allowlists import TENSOR_COMPUTE, torch_name_ok
from ..astutil import always_raises
from ..context import EXT_BUILDERS, Context
from ..registry import rule, violation

NAME = "try_except"


def _kernel_functions(ctx: Context) -> set[str]:
    """Names of functions/methods that launch or build an own kernel, directly or through calls."""
    fns = list(ctx.functions.items()) + [(n, f) for ms in ctx.methods.values() for n, f in ms.items()]
    names: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, fn in fns:
            if name not in names and _touches_kernel(ctx, fn, names):
                names.add(name)
                changed = True
    return names


def _touches_kernel(ctx: Context, node: ast.AST, kfuncs: set[str]) -> bool:
    for n in ast.walk(node):
        if not isinstance(n, ast.Call):
            continue
        if ctx.launch_kind(n) or ctx.resolve(n.func) in EXT_BUILDERS:
            return True
        if isinstance(n.func, ast.Subscript) and ctx.references_jit(n.func.value):
            return True
        f = n.func
        callee = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if callee in kfuncs or (isinstance(f, ast.Attribute) and f.attr == "apply"
                                and isinstance(f.value, ast.Name) and f.value.id in kfuncs):
            return True
        if isinstance(f, ast.Attribute) and ctx.is_ext(f.value):
            return True
    return False


def _torch_compute(ctx: Context, stmts: list[ast.stmt]) -> bool:
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Call):
                r = ctx.resolve(n.func)
                if r and r.startswith("torch.") and not torch_name_ok(r, call=True):
                    return True
                if r is None and isinstance(n.func, ast.Attribute) and n.func.attr in TENSOR_COMPUTE:
                    return True
                if isinstance(n.func, ast.Name) and n.func.id in ("Model", "super"):
                    return True
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
                return True
    return False


@rule(NAME)
def check(ctx: Context):
    """A ``try`` whose body launches or builds an own kernel must not swallow the failure: each
    ``except`` handler must re-raise on every path, or retry with an own kernel without any torch
    compute. A handler that falls back to PyTorch, to the reference, or just continues (the
    "fallback to torch" pattern) is flagged in every preset; so is ``contextlib.suppress`` around a
    kernel launch. A try/except that does not involve a kernel is not this rule's business."""
    kfuncs = _kernel_functions(ctx)
    for node in ast.walk(ctx.tree):
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            if not any(_touches_kernel(ctx, s, kfuncs) for s in node.body):
                continue
            for h in node.handlers:
                if always_raises(h.body):
                    continue
                retry = any(_touches_kernel(ctx, s, kfuncs) for s in h.body)
                if retry and not _torch_compute(ctx, h.body):
                    continue
                what = "falls back to PyTorch/reference compute" if _torch_compute(ctx, h.body) else \
                    "swallows the failure"
                yield violation(NAME, h, f"this `except` handler {what} when your kernel (launched or "
                                f"built in the `try` at line {node.lineno}) fails. Let errors propagate "
                                "(remove the try/except or re-raise) so a broken kernel is reported, "
                                "not hidden behind a fallback.")
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                e = item.context_expr
                if isinstance(e, ast.Call) and (ctx.resolve(e.func) or "").endswith("contextlib.suppress") \
                        and any(_touches_kernel(ctx, s, kfuncs) for s in node.body):
                    yield violation(NAME, node, "`contextlib.suppress(...)` around your kernel hides its "
                                    "failures; remove it so errors propagate.")
