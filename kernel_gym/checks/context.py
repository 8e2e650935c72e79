"""The analysed solution shared by every rule: names, classes, own kernels, the forward path."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from . import helion
from .astutil import Names, docstring_nodes, parent_map, string_literals
from .classattrs import AttrInfo, class_attrs
from .cpp import cpp_sources
from .dsl_index import DslIndex
from .presets import Preset
from .reach import FnRef, forward_path
from .task_policy import PERMISSIVE, TaskPolicy

RAW_BUILDER = "kernel_gym.cuda_raw.compile"  # backend="cuda_raw": its module's attributes are the __global__ kernels
EXT_BUILDERS = ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load", RAW_BUILDER)
FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


class Context:
    def __init__(self, code: str, tree: ast.Module, preset: Preset, backend: str | None,
                 task_dtype: str, allow_precision: bool, task: TaskPolicy = PERMISSIVE):
        self.code, self.tree, self.preset = code, tree, preset
        self.backend, self.task_dtype, self.allow_precision = backend, task_dtype, allow_precision
        self.task = task  # what the task's reference computes (kernel_gym.checks.task_policy)
        self.names = Names(tree)
        self.resolve = self.names.resolve
        self.parents = parent_map(tree)
        self.docstrings = docstring_nodes(tree)
        self.strings = list(string_literals(tree, self.parents, self.docstrings))
        self.cpp = cpp_sources(self.strings)
        self.has_global_kernel = any("__global__" in text for text, _ in self.cpp)
        self.has_torch_library = any("TORCH_LIBRARY" in text for text, _ in self.cpp)
        self._index()
        self.ext_functions = self._ext_function_names()
        self._find_kernels_and_exts()
        self.annotations = {id(a) for n in ast.walk(tree) for a in (
            [getattr(n, "annotation", None), getattr(n, "returns", None)]) if a is not None}
        self.attrs = {c: class_attrs(self, node) for c, node in self.classes.items()}
        self.forward: list[FnRef] = forward_path(self)
        self.launches = [(n, kind, fr) for fr in self.forward for n in self.walk(fr)
                         if (kind := self.launch_kind(n))]

    # ---- indexing ------------------------------------------------------------------------
    def _index(self) -> None:
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, ast.AST] = {}
        self.methods: dict[str, dict[str, ast.AST]] = {}
        self.jit: set[str] = set()
        self.jit_nodes: set[int] = set()
        self.custom_ops: dict[str, ast.AST] = {}
        self.helion: dict[str, ast.AST] = {}  # backend="helion": its kernels (checks/helion.py)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
                self.methods[node.name] = {s.name: s for s in node.body if isinstance(s, FUNC_TYPES)}
            elif isinstance(node, FUNC_TYPES):
                if self.is_jit_def(node):
                    self.jit.add(node.name)
                    self.jit_nodes.add(id(node))
                elif helion.is_kernel_def(node, self.resolve) and not isinstance(self.parents.get(node), ast.ClassDef):
                    self.helion[node.name] = node
                    self.functions[node.name] = node
                elif not isinstance(self.parents.get(node), ast.ClassDef):
                    self.functions[node.name] = node
                for d in node.decorator_list:
                    r = self.resolve(d.func if isinstance(d, ast.Call) else d) or ""
                    if r.startswith("torch.library.") and isinstance(d, ast.Call) and d.args \
                            and isinstance(d.args[0], ast.Constant):
                        self.custom_ops[str(d.args[0].value)] = node
        for node in ast.walk(self.tree):  # helion.kernel(fn, config=...): fn is a Helion kernel too
            if isinstance(node, ast.Call) and helion.kernel_call(node, self.resolve) \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in self.functions:
                self.helion[node.args[0].id] = self.functions[node.args[0].id]
        # their hl.tile/hl.grid loops are device code: Helion's kernel, never walked as the forward path's PyTorch;
        # so are CuTe DSL kernels and TileLang prim_funcs (checks/dsl_index.py)
        self.device_nodes = {id(loop): loop for fn in self.helion.values()
                             for loop in helion.device_loops(fn, self.resolve)}
        self.dsl = DslIndex(self.tree, self.resolve, self.parents)
        self.device_nodes.update({id(fn): fn for fn in self.dsl.device})
        for stmt in self.tree.body:  # module-level lambdas act as functions
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Lambda):
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        self.functions[t.id] = stmt.value

    def is_jit_def(self, node: ast.AST) -> bool:
        for d in getattr(node, "decorator_list", []):
            r = self.resolve(d.func if isinstance(d, ast.Call) else d) or ""
            if r.startswith("triton.") and r.rsplit(".", 1)[-1] in ("jit", "autotune", "heuristics"):
                return True
        return False

    def _assignments(self) -> Iterator[tuple[ast.expr, ast.expr]]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    yield t, node.value
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                yield node.target, node.value

    def _find_kernels_and_exts(self) -> None:
        """Names and ``self.<attr>``s that hold a kernel, an extension module or an extension function, followed
        through assignments, containers (``{"mm": ext.mm}``, ``[kernel]``), factories and call arguments
        (``launch(self.kernel, x)`` makes ``launch``'s parameter a kernel)."""
        self.kernel_names: set[str] = set()
        self.kernel_attrs: set[str] = set()
        self.ext_names: set[str] = set()
        self.ext_attrs: set[str] = set()
        self.ext_fn_names: set[str] = set()  # hold a function of an extension (``fn = ext.relu``), or a container of them
        self.ext_fn_attrs: set[str] = set()
        self.ext_factories: set[str] = set()
        self.helion_names: set[str] = set()  # hold a Helion kernel (``k = relu_kernel``, ``self.k = ...``)
        self.helion_attrs: set[str] = set()
        dsl = self.dsl.trackers() if self.dsl else []  # CuTe DSL / TileLang kernels held in names and attributes
        for _ in range(4):  # small fixpoint: aliases of aliases, factories returning factories
            for target, value in list(self._assignments()) + list(self._bound_arguments()):
                while isinstance(target, ast.Subscript):
                    target = target.value
                for hit, names, attrs in ((self._holds_kernel(value), self.kernel_names, self.kernel_attrs),
                                          (self.is_ext(value), self.ext_names, self.ext_attrs),
                                          (self._holds_ext_fn(value), self.ext_fn_names, self.ext_fn_attrs),
                                          (self.holds_helion(value), self.helion_names, self.helion_attrs),
                                          *((holds(value), n, a) for holds, n, a in dsl)):
                    if hit and isinstance(target, ast.Name):
                        names.add(target.id)
                    elif hit and isinstance(target, ast.Attribute):
                        attrs.add(target.attr)
            for name, fn in list(self.functions.items()) + [
                    (n, f) for ms in self.methods.values() for n, f in ms.items()]:
                if any(isinstance(n, ast.Return) and n.value is not None and self.is_ext(n.value)
                       for n in ast.walk(fn)):
                    self.ext_factories.add(name)

    def _holds_kernel(self, value: ast.AST) -> bool:
        if isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
            elts = value.values if isinstance(value, ast.Dict) else value.elts
            return any(self._holds_kernel(e) for e in elts)
        launch = isinstance(value, ast.Call) and isinstance(value.func, ast.Subscript)
        return (self.references_jit(value) and not launch) or self._jit_call(value)

    def _holds_ext_fn(self, value: ast.AST) -> bool:
        """``ext.fn`` (a function of an extension module), a name holding one, or a container of them."""
        if isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
            elts = value.values if isinstance(value, ast.Dict) else value.elts
            return any(e is not None and self._holds_ext_fn(e) for e in elts)
        if isinstance(value, ast.Subscript):
            return self._holds_ext_fn(value.value)
        if isinstance(value, ast.Attribute) and self.is_ext(value.value):
            return self.ext_functions is None or value.attr in self.ext_functions
        if isinstance(value, ast.Name):
            return value.id in self.ext_fn_names
        if isinstance(value, ast.Attribute):
            return value.attr in self.ext_fn_attrs and isinstance(value.value, ast.Name)
        return False

    def holds_helion(self, value: ast.AST) -> bool:
        """A Helion kernel that generates a kernel (it has a device loop), or a name/``self.<attr>`` holding one."""
        if isinstance(value, ast.Call) and helion.kernel_call(value, self.resolve):
            value = value.args[0]
        if isinstance(value, ast.Name):
            fn = self.helion.get(value.id)
            return (fn is not None and self.has_device_code(fn)) or value.id in self.helion_names
        return isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) \
            and value.attr in self.helion_attrs

    def has_device_code(self, fn: ast.AST) -> bool:
        return any(id(loop) in self.device_nodes for loop in helion.device_loops(fn, self.resolve))

    def _bound_arguments(self) -> Iterator[tuple[ast.expr, ast.expr]]:
        """(parameter, argument) for every call of a solution function, method or class (its ``__init__``) whose
        target is known by name: ``launch(self.kernel, x)`` binds ``launch``'s first parameter to ``self.kernel``."""
        for call in ast.walk(self.tree):
            if not isinstance(call, ast.Call):
                continue
            f, target, skip = call.func, None, 0
            if isinstance(f, ast.Name) and f.id in self.functions:
                target = self.functions[f.id]
            elif isinstance(f, ast.Name) and f.id in self.classes:
                found = self.find_method(f.id, "__init__")
                target, skip = (found[1], 1) if found else (None, 0)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                found = next((ms[f.attr] for ms in self.methods.values() if f.attr in ms), None)
                target, skip = found, 1
            if not isinstance(target, FUNC_TYPES):
                continue
            params = [a.arg for a in target.args.posonlyargs + target.args.args][skip:]
            for name, arg in zip(params, call.args):
                if not isinstance(arg, ast.Starred):
                    yield ast.Name(id=name, ctx=ast.Store()), arg
            for kw in call.keywords:
                if kw.arg:
                    yield ast.Name(id=kw.arg, ctx=ast.Store()), kw.value

    def _jit_call(self, value: ast.AST) -> bool:
        """``triton.jit(fn)`` / ``triton.autotune(...)(triton.jit(fn))`` used as a call, not a decorator."""
        f = value.func if isinstance(value, ast.Call) else None
        while isinstance(f, ast.Call):
            f = f.func
        r = self.resolve(f) or ""
        return r.startswith("triton.") and r.rsplit(".", 1)[-1] in ("jit", "autotune", "heuristics")

    def references_jit(self, expr: ast.AST) -> bool:
        for n in ast.walk(expr):
            if isinstance(n, ast.Name) and (n.id in self.jit or n.id in self.kernel_names):
                return True
            if isinstance(n, ast.Attribute) and n.attr in self.kernel_attrs and isinstance(n.value, ast.Name):
                return True
        return False

    def is_ext(self, v: ast.AST) -> bool:
        """Is ``v`` a module built by load_inline (directly, through a variable or a factory)?"""
        if isinstance(v, ast.Call):
            if self.resolve(v.func) in EXT_BUILDERS:
                return True
            f = v.func
            return (isinstance(f, ast.Name) and f.id in self.ext_factories) or (
                isinstance(f, ast.Attribute) and f.attr in self.ext_factories)
        if isinstance(v, ast.Name):
            return v.id in self.ext_names
        if isinstance(v, ast.Attribute):
            return v.attr in self.ext_attrs and isinstance(v.value, ast.Name)
        if isinstance(v, ast.Subscript):
            return self.is_ext(v.value)
        return False

    def _ext_function_names(self) -> set[str] | None:
        """Functions the load_inline modules export (``functions=[...]``, ``m.def("name", ...)``);
        None when they cannot be read statically (then any attribute of the module counts)."""
        names: set[str] = set()
        consts = {t.id: s.value for s in self.tree.body if isinstance(s, ast.Assign)
                  for t in s.targets if isinstance(t, ast.Name)}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Call) and self.resolve(n.func) == RAW_BUILDER:
                from kernel_gym.c_params import kernel_signatures  # the kernels a raw module exposes

                names |= {k for text, _ in self.cpp for k in kernel_signatures(text)}
            elif isinstance(n, ast.Call) and self.resolve(n.func) in EXT_BUILDERS:
                fv = next((k.value for k in n.keywords if k.arg == "functions"), None)
                fv = consts.get(fv.id, fv) if isinstance(fv, ast.Name) else fv
                if fv is None:
                    continue
                try:
                    val = ast.literal_eval(fv)
                except ValueError:
                    return None
                names |= {val} if isinstance(val, str) else {str(v) for v in val}
        for text, _ in self.cpp:
            names |= set(re.findall(r"\.def\(\s*\"(\w+)\"", text))
        return names or None

    def is_ext_call(self, call: ast.AST) -> bool:
        """``ext.fn(...)`` where ``ext`` is a load_inline module and ``fn`` one of its functions."""
        return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
            and self.is_ext(call.func.value) \
            and (self.ext_functions is None or call.func.attr in self.ext_functions)

    # ---- the forward path ------------------------------------------------------------------
    def mro(self, cls: str | None) -> list[str]:
        out: list[str] = []
        todo = [cls] if cls else []
        while todo:
            c = todo.pop(0)
            if c in self.classes and c not in out:
                out.append(c)
                todo += [b.id for b in self.classes[c].bases if isinstance(b, ast.Name)]
        return out

    def find_method(self, cls: str | None, name: str, skip_first: bool = False) -> tuple[str, ast.AST] | None:
        for c in self.mro(cls)[1 if skip_first else 0:]:
            if name in self.methods[c]:
                return c, self.methods[c][name]
        return None

    def attr_info(self, cls: str | None, attr: str) -> AttrInfo | None:
        for c in self.mro(cls):
            if attr in self.attrs[c]:
                return self.attrs[c][attr]
        return None

    def walk(self, fr: FnRef) -> Iterator[ast.AST]:
        """Every node of a forward-path function, not descending into @triton.jit kernels, the device loops of
        Helion kernels, CuTe DSL kernels or TileLang prim_funcs (their code is the kernel)."""
        todo = [fr.node]
        while todo:
            node = todo.pop()
            yield node
            todo += [c for c in ast.iter_child_nodes(node) if id(c) not in self.jit_nodes
                     and id(c) not in self.annotations and id(c) not in self.device_nodes]

    def launch_kind(self, n: ast.AST) -> str | None:
        """'triton' for ``kernel[grid](...)``, 'cuda' for a call into a load_inline module, 'helion' for a call of a
        Helion kernel that has a device loop, 'cute_dsl'/'tilelang' as `DslIndex.launch_kind` says."""
        if not isinstance(n, ast.Call):
            return None
        f = n.func
        if self.dsl and (kind := self.dsl.launch_kind(n)):
            return kind
        if self.helion and not isinstance(f, ast.Subscript) and self.holds_helion(f):
            return "helion"
        if isinstance(f, ast.Subscript) and self.references_jit(f.value):
            return "triton"
        if self.has_global_kernel and not isinstance(f, ast.Attribute) and self._holds_ext_fn(f):
            return "cuda"  # fn(x), self.ops["mm"](x) with fn / self.ops holding extension functions
        if isinstance(f, ast.Attribute):
            if f.attr == "run" and self.references_jit(f.value):
                return "triton"
            if self.has_global_kernel and (self.is_ext_call(n) or self._holds_ext_fn(f)):
                return "cuda"  # ext.fn(x), self.matmul_cuda(x) with self.matmul_cuda = ext.matmul_cuda
            r = self.resolve(f) or ""
            if r.startswith("torch.ops.") and r.split(".")[2] not in ("aten", "prims") \
                    and self.has_torch_library and self.has_global_kernel:
                return "cuda"
        return None

    def qualname_of(self, fr: FnRef) -> str:
        return fr.qualname if fr.qualname.startswith("ModelNew.") else \
            f"{fr.qualname} (reached from ModelNew.forward)"
