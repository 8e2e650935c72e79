"""TileLang (`backend="tilelang"`) as the static rules see it: which functions are its kernels and which calls
launch one.

A ``@T.prim_func`` function is device code: TileLang parses its body (``with T.Kernel(...)``, ``T.copy``,
``T.gemm``, ``T.Parallel`` loops) into TVM's IR and compiles it for the GPU, so its statements are the solution's
own kernel and are never read as PyTorch. ``@tilelang.jit`` wraps a function two ways (TileLang infers which):
- *lazy*: a factory that builds and returns a ``@T.prim_func`` (``make(M, N)`` compiles it once per arguments and
  returns the kernel; ``make(M, N)(x)`` launches it). The factory's own code is host code, run as ordinary Python
  (and PyTorch) while compiling: it is read like ``forward`` (the hidden-library attack: a "TileLang kernel"
  whose factory or forward does the work with torch and whose kernel copies).
- *eager*: the function's body is itself the kernel (tensor parameters annotated ``T.Tensor[...]``, a
  ``with T.Kernel(...)`` block): calling it compiles and launches.
``tilelang.compile(prim_func, ...)`` returns a kernel too.
"""

from __future__ import annotations

import ast

from kernel_gym.checks.decorators import FUNC_TYPES, Resolve, decorated

PRIM_FUNC = ("tilelang.language.prim_func", "tilelang.prim_func")
JIT = ("tilelang.jit", "tilelang.jit.jit")
COMPILERS = ("tilelang.compile", "tilelang.jit.compile")
KERNEL_BLOCKS = ("tilelang.language.Kernel",)  # `with T.Kernel(...)`: the launch grid of an eager kernel


def is_prim_func_def(node: ast.AST, resolve: Resolve) -> bool:
    """``@T.prim_func`` (or ``@T.prim_func(...)``)."""
    return decorated(node, PRIM_FUNC, resolve)


def is_jit_def(node: ast.AST, resolve: Resolve) -> bool:
    """``@tilelang.jit`` / ``@tilelang.jit(out_idx=...)``."""
    return decorated(node, JIT, resolve)


def jit_call(value: ast.AST, resolve: Resolve) -> bool:
    """``tilelang.jit(fn)`` / ``tilelang.jit(out_idx=...)(fn)`` used as a call, not a decorator."""
    if not isinstance(value, ast.Call) or not value.args:
        return False
    f = value.func
    while isinstance(f, ast.Call):
        f = f.func
    return (resolve(f) or "") in JIT


def is_compile_call(node: ast.AST, resolve: Resolve) -> bool:
    """``tilelang.compile(prim_func, ...)``: a compiled kernel."""
    return isinstance(node, ast.Call) and (resolve(node.func) or "") in COMPILERS


def nested_prim_funcs(fn: ast.AST, resolve: Resolve) -> list[ast.AST]:
    """The ``@T.prim_func`` definitions inside a function (a lazy factory returns one)."""
    return [n for n in ast.walk(fn) if n is not fn and isinstance(n, FUNC_TYPES) and is_prim_func_def(n, resolve)]


def is_eager(fn: ast.AST, resolve: Resolve) -> bool:
    """An eager ``@tilelang.jit`` function: no nested ``@T.prim_func``, and a ``with T.Kernel(...)`` block of its
    own (its body is the kernel)."""
    if nested_prim_funcs(fn, resolve):
        return False
    return any(isinstance(n, ast.With) and any(
        isinstance(item.context_expr, ast.Call) and (resolve(item.context_expr.func) or "") in KERNEL_BLOCKS
        for item in n.items) for n in ast.walk(fn))
