"""The CuTe DSL and TileLang parts of a solution, for the shared `Context`: their kernels (device code, never read
as PyTorch), their host functions (read like `forward`), and which calls of the forward path launch a kernel.

The rules of each language are in `checks/cute_dsl.py` and `checks/tilelang.py`; this index applies them to one
solution and follows kernels through names, ``self.<attr>``s and containers (``self._compiled[key] = cute.compile(...)``
then ``self._compiled[key](...)``), as `Context` does for Triton kernels and Helion functions.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from . import cute_dsl, tilelang

FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
CONTAINERS = (ast.Dict, ast.List, ast.Tuple, ast.Set)


class DslIndex:
    def __init__(self, tree: ast.Module, resolve: Callable, parents: dict[ast.AST, ast.AST]):
        self.resolve = resolve
        self.cute_kernels: dict[str, ast.AST] = {}  # @cute.kernel functions and methods
        self.cute_jit: dict[str, ast.AST] = {}  # @cute.jit functions and methods
        self.tl_prims: dict[str, ast.AST] = {}  # @T.prim_func functions (nested in factories too)
        self.tl_jit: dict[str, ast.AST] = {}  # @tilelang.jit functions: lazy factories or eager kernels
        self.owners: dict[int, str] = {}  # id(method) -> its class
        for node in ast.walk(tree):
            if not isinstance(node, FUNC_TYPES):
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.ClassDef):
                self.owners[id(node)] = parent.name
            for test, table in ((cute_dsl.is_kernel_def, self.cute_kernels), (cute_dsl.is_jit_def, self.cute_jit),
                                (tilelang.is_prim_func_def, self.tl_prims), (tilelang.is_jit_def, self.tl_jit)):
                if test(node, resolve):
                    table[node.name] = node
                    break
        for node in ast.walk(tree):  # fn = tilelang.jit(out_idx=[-1])(factory): the factory is a jit function too
            if isinstance(node, ast.Assign) and tilelang.jit_call(node.value, resolve) \
                    and isinstance(node.value.args[0], ast.Name):
                found = next((n for n in ast.walk(tree) if isinstance(n, FUNC_TYPES)
                              and n.name == node.value.args[0].id), None)
                for t in node.targets:
                    if found is not None and isinstance(t, ast.Name):
                        self.tl_jit[t.id] = found
        self.cute_launchers = cute_dsl.launching_jit(self.cute_jit, set(self.cute_kernels))
        self.tl_eager = {name for name, fn in self.tl_jit.items() if tilelang.is_eager(fn, resolve)}
        self.tl_factories = {name for name, fn in self.tl_jit.items()
                             if name not in self.tl_eager and tilelang.nested_prim_funcs(fn, resolve)}
        # classes whose instances launch when called (a @cute.jit __call__ that launches a kernel)
        self.cute_classes = {self.owners[id(fn)] for name, fn in self.cute_jit.items()
                             if name == "__call__" and name in self.cute_launchers and id(fn) in self.owners}
        self.device = [*self.cute_kernels.values(), *self.tl_prims.values(),
                       *(self.tl_jit[n] for n in self.tl_eager)]
        self.cute_names: set[str] = set()
        self.cute_attrs: set[str] = set()
        self.tl_names: set[str] = set()
        self.tl_attrs: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.cute_kernels or self.cute_jit or self.tl_prims or self.tl_jit)

    def trackers(self) -> list[tuple[Callable[[ast.AST], bool], set[str], set[str]]]:
        """(what holds a kernel, the names, the attributes) for `Context`'s fixpoint over assignments."""
        return [(self.holds_cute, self.cute_names, self.cute_attrs), (self.holds_tilelang, self.tl_names, self.tl_attrs)]

    def host_functions(self) -> list[tuple[str | None, ast.AST, str]]:
        """(owner class, node, name) of the host code the forward path runs: launching @cute.jit functions and lazy
        @tilelang.jit factories, wherever they are called from (a compiled function held in an attribute made in
        __init__ still runs this code's kernels, and its PyTorch ran as PyTorch)."""
        out = [(self.owners.get(id(self.cute_jit[n])), self.cute_jit[n], n) for n in sorted(self.cute_launchers)]
        return out + [(self.owners.get(id(self.tl_jit[n])), self.tl_jit[n], n) for n in sorted(self.tl_factories)]

    def holds_cute(self, value: ast.AST) -> bool:
        """A @cute.jit function that launches a @cute.kernel, its ``cute.compile(...)`` result, an instance of a class
        whose @cute.jit ``__call__`` launches one, or a name/``self.<attr>``/container holding one of them."""
        if isinstance(value, CONTAINERS):
            elts = value.values if isinstance(value, ast.Dict) else value.elts
            return any(e is not None and self.holds_cute(e) for e in elts)
        if isinstance(value, ast.Subscript):
            return self.holds_cute(value.value)
        if isinstance(value, ast.Call):
            if cute_dsl.is_compile_call(value, self.resolve):
                return bool(value.args) and self.holds_cute(value.args[0])
            return isinstance(value.func, ast.Name) and value.func.id in self.cute_classes
        if isinstance(value, ast.Name):
            return value.id in self.cute_launchers or value.id in self.cute_names
        return isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) \
            and (value.attr in self.cute_attrs or value.attr in self.cute_launchers)

    def holds_tilelang(self, value: ast.AST) -> bool:
        """A compiled TileLang kernel: a lazy factory's result (``make(M, N)``), ``tilelang.compile(...)``, or a
        name/``self.<attr>``/container holding one."""
        if isinstance(value, CONTAINERS):
            elts = value.values if isinstance(value, ast.Dict) else value.elts
            return any(e is not None and self.holds_tilelang(e) for e in elts)
        if isinstance(value, ast.Subscript):
            return self.holds_tilelang(value.value)
        if isinstance(value, ast.Call):
            f = value.func
            return tilelang.is_compile_call(value, self.resolve) or (isinstance(f, ast.Name) and (
                f.id in self.tl_factories)) or (isinstance(f, ast.Attribute) and f.attr in self.tl_factories)
        if isinstance(value, ast.Name):
            return value.id in self.tl_names
        return isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.attr in self.tl_attrs

    def launch_kind(self, n: ast.Call) -> str | None:
        """'cute_dsl' for a call of a launching JIT function (or its compiled form) or a ``kernel(...).launch(...)``;
        'tilelang' for a call of a compiled TileLang kernel or of an eager @tilelang.jit function."""
        f = n.func
        if self.cute_kernels and (cute_dsl.launched_kernel(n, set(self.cute_kernels)) or self.holds_cute(f)):
            return "cute_dsl"
        if self.tl_jit or self.tl_prims:
            if self.holds_tilelang(f) or (isinstance(f, ast.Name) and f.id in self.tl_eager):
                return "tilelang"
        return None
