"""CuTe DSL (`backend="cute_dsl"`, package nvidia-cutlass-dsl) as the static rules see it: which functions are its
kernels, which are its JIT host functions, and which calls launch a kernel.

A ``@cute.kernel`` function is device code: the DSL traces its body into MLIR and compiles it for the GPU, so its
statements are the solution's own kernel and are never read as PyTorch. A ``@cute.jit`` function is host code that
the DSL traces once per signature: it lays out tensors and launches kernels (``kernel(...).launch(grid=, block=)``);
whatever PyTorch it calls runs as PyTorch (once, while tracing), so it is read like ``forward`` (the hidden-library
attack: a "CuTe DSL kernel" whose JIT function or forward does the GEMM with torch and whose kernel copies).
Kernels and JIT functions may be methods of a plain class (CUTLASS's own examples hold them so):
``self.kernel(...).launch(...)`` inside a ``@cute.jit`` method launches the ``@cute.kernel`` method ``kernel``.
"""

from __future__ import annotations

import ast

from kernel_gym.checks.decorators import Resolve, decorated

KERNEL_DECORATORS = ("cutlass.cute.kernel",)
JIT_DECORATORS = ("cutlass.cute.jit",)
COMPILERS = ("cutlass.cute.compile",)  # cute.compile(jit_fn, *example_args) -> a compiled, callable host function


def is_kernel_def(node: ast.AST, resolve: Resolve) -> bool:
    """``@cute.kernel`` (or ``@cute.kernel(...)``)."""
    return decorated(node, KERNEL_DECORATORS, resolve)


def is_jit_def(node: ast.AST, resolve: Resolve) -> bool:
    """``@cute.jit`` (or ``@cute.jit(...)``)."""
    return decorated(node, JIT_DECORATORS, resolve)


def is_compile_call(node: ast.AST, resolve: Resolve) -> bool:
    """``cute.compile(fn, ...)`` (also ``cute.compile[options](fn, ...)``)."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func.value if isinstance(node.func, ast.Subscript) else node.func
    return (resolve(f) or "") in COMPILERS


def launched_kernel(call: ast.AST, kernels: set[str]) -> str | None:
    """The kernel a ``k(...).launch(...)`` / ``self.k(...).launch(...)`` call launches, when ``k`` is one of
    `kernels` (the ``@cute.kernel`` names); else None."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "launch"):
        return None
    inner = call.func.value
    if not isinstance(inner, ast.Call):
        return None
    f = inner.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return name if name in kernels else None


def launching_jit(jit: dict[str, ast.AST], kernels: set[str]) -> set[str]:
    """The ``@cute.jit`` functions that launch a ``@cute.kernel``, directly or through another such JIT function."""
    found: set[str] = set()
    for _ in range(4):  # jit functions calling jit functions: a small fixpoint
        for name, fn in jit.items():
            if name in found:
                continue
            for n in ast.walk(fn):
                if launched_kernel(n, kernels) or (isinstance(n, ast.Call) and _callee(n) in found):
                    found.add(name)
                    break
    return found


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
