"""What the kernel-language readers (helion, cute_dsl, tilelang) share: a decorator resolved to its dotted name."""

from __future__ import annotations

import ast
from collections.abc import Callable

FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
Resolve = Callable[[ast.AST | None], "str | None"]  # an expression -> the dotted name it refers to, if known


def decorated(node: ast.AST, names: tuple[str, ...], resolve: Resolve) -> bool:
    """Whether `node` has a decorator (``@d`` or ``@d(...)``) that resolves to one of `names`."""
    return any((resolve(d.func if isinstance(d, ast.Call) else d) or "") in names
               for d in getattr(node, "decorator_list", []))
