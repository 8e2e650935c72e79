"""Helion (`backend="helion"`) as the static rules see it: which functions are Helion kernels and which of their
statements are device code.

A ``@helion.kernel`` function mixes two kinds of code. Its ``for ... in hl.tile(...)`` / ``hl.grid(...)`` loops
are device code: Helion traces the torch ops inside them and generates one Triton kernel from them, so those ops are
the solution's own kernel. Everything outside those loops is host code: Helion runs it as ordinary PyTorch before
the launch, so a ``torch.matmul`` there is a library call like one in ``forward`` (the hidden-library attack: a
"Helion kernel" whose host code does the whole job and whose loop does nothing). A Helion kernel without such a loop
generates no kernel at all.
"""

from __future__ import annotations

import ast

from kernel_gym.checks.decorators import FUNC_TYPES, Resolve, decorated

DECORATORS = ("helion.kernel", "helion.jit", "helion.runtime.kernel")
DEVICE_LOOPS = ("helion.language.tile", "helion.language.grid")


def is_kernel_def(node: ast.AST, resolve: Resolve) -> bool:
    """``@helion.kernel``, ``@helion.kernel(config=...)`` (or ``helion.jit``, its alias)."""
    return decorated(node, DECORATORS, resolve)


def kernel_call(value: ast.AST, resolve: Resolve) -> bool:
    """``helion.kernel(fn, config=...)`` / ``helion.kernel(config=...)(fn)`` used as a call, not a decorator."""
    f = value.func if isinstance(value, ast.Call) else None
    while isinstance(f, ast.Call):
        f = f.func
    return (resolve(f) or "") in DECORATORS and isinstance(value, ast.Call) and bool(value.args)


def device_loops(fn: ast.AST, resolve: Resolve) -> list[ast.For]:
    """The outermost ``for ... in hl.tile(...)`` / ``hl.grid(...)`` loops of a Helion kernel (its device code)."""
    found: list[ast.For] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) \
                and (resolve(node.iter.func) or "") in DEVICE_LOOPS:
            found.append(node)
            continue
        if not isinstance(node, (*FUNC_TYPES, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda n: n.lineno)
