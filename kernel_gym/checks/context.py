"""The analysed solution shared by every rule: names, classes, own kernels, the forward path."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from .allowlists import NN_CONTAINERS, NN_NONCOMPUTE, torch_name_ok
from .astutil import COMPILER_CALLS, Names, docstring_nodes, is_super_call, parent_map, string_literals
from .cpp import cpp_sources
from .presets import Preset

EXT_BUILDERS = ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load")
FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class AttrInfo:
    """What ``self.<attr>`` was assigned in a class: torch.nn modules, own classes, callables."""

    torch_mods: set[str] = field(default_factory=set)
    own: set[str] = field(default_factory=set)
    torch_callable: str | None = None
    func: str | None = None


@dataclass
class FnRef:
    """A function on the forward path, with the class it belongs to (for ``self``)."""

    owner: str | None
    node: ast.AST
    qualname: str
    self_name: str | None


class Context:
    def __init__(self, code: str, tree: ast.Module, preset: Preset, backend: str | None,
                 task_dtype: str, allow_precision: bool):
        self.code, self.tree, self.preset = code, tree, preset
        self.backend, self.task_dtype, self.allow_precision = backend, task_dtype, allow_precision
        self.names = Names(tree)
        self.resolve = self.names.resolve
        self.parents = parent_map(tree)
        self.docstrings = docstring_nodes(tree)
        self.strings = list(string_literals(tree, self.parents, self.docstrings))
        self.cpp = cpp_sources(self.strings)
        self.has_global_kernel = any("__global__" in text for text, _ in self.cpp)
        self.has_torch_library = any("TORCH_LIBRARY" in text for text, _ in self.cpp)
        self._index()
        self._find_kernels_and_exts()
        self.attrs = {c: self._class_attrs(node) for c, node in self.classes.items()}
        self.forward: list[FnRef] = []
        self._reach()
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
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
                self.methods[node.name] = {s.name: s for s in node.body if isinstance(s, FUNC_TYPES)}
            elif isinstance(node, FUNC_TYPES):
                if self.is_jit_def(node):
                    self.jit.add(node.name)
                    self.jit_nodes.add(id(node))
                elif not isinstance(self.parents.get(node), ast.ClassDef):
                    self.functions[node.name] = node
                for d in node.decorator_list:
                    r = self.resolve(d.func if isinstance(d, ast.Call) else d) or ""
                    if r.startswith("torch.library.") and isinstance(d, ast.Call) and d.args \
                            and isinstance(d.args[0], ast.Constant):
                        self.custom_ops[str(d.args[0].value)] = node
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
        self.kernel_names: set[str] = set()
        self.kernel_attrs: set[str] = set()
        self.ext_names: set[str] = set()
        self.ext_attrs: set[str] = set()
        self.ext_factories: set[str] = set()
        for _ in range(4):  # small fixpoint: aliases of aliases, factories returning factories
            for target, value in self._assignments():
                while isinstance(target, ast.Subscript):
                    target = target.value
                for bucket_name, bucket_attr, test in ((self.kernel_names, self.kernel_attrs,
                                                        self.references_jit),
                                                       (self.ext_names, self.ext_attrs, self.is_ext)):
                    launch = isinstance(value, ast.Call) and isinstance(value.func, ast.Subscript)
                    if test(value) and not launch:
                        if isinstance(target, ast.Name):
                            bucket_name.add(target.id)
                        elif isinstance(target, ast.Attribute):
                            bucket_attr.add(target.attr)
            for name, fn in list(self.functions.items()) + [
                    (n, f) for ms in self.methods.values() for n, f in ms.items()]:
                if any(isinstance(n, ast.Return) and n.value is not None and self.is_ext(n.value)
                       for n in ast.walk(fn)):
                    self.ext_factories.add(name)

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

    def _class_attrs(self, cls: ast.ClassDef) -> dict[str, AttrInfo]:
        out: dict[str, AttrInfo] = {}
        for fn in cls.body:
            if not isinstance(fn, FUNC_TYPES) or not fn.args.args:
                continue
            me = fn.args.args[0].arg
            for n in ast.walk(fn):
                pairs: list[tuple[str, ast.expr]] = []
                if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                            pairs.append((t.attr, n.value))
                        elif isinstance(t, ast.Tuple) and isinstance(n.value, ast.Tuple):
                            pairs += [(e.attr, v) for e, v in zip(t.elts, n.value.elts)
                                      if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
                                      and e.value.id == me]
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                        and n.func.attr in ("add_module", "register_module") and len(n.args) == 2 \
                        and isinstance(n.args[0], ast.Constant):
                    pairs.append((str(n.args[0].value), n.args[1]))
                for attr, value in pairs:
                    self._classify(out.setdefault(attr, AttrInfo()), value)
        return out

    def _classify(self, info: AttrInfo, value: ast.expr) -> None:
        if isinstance(value, (ast.Name, ast.Attribute)):
            r = self.resolve(value)
            if r and r.startswith("torch.") and not torch_name_ok(r, call=False):
                info.torch_callable = r
            if isinstance(value, ast.Name) and value.id in self.functions:
                info.func = value.id
        for n in ast.walk(value):
            if not isinstance(n, ast.Call):
                continue
            r = self.resolve(n.func) or ""
            last = r.rsplit(".", 1)[-1]
            if r.startswith("torch.nn.") and last[:1].isupper() and last not in NN_NONCOMPUTE \
                    and last not in NN_CONTAINERS:
                info.torch_mods.add(last)
            elif r in COMPILER_CALLS:
                info.torch_callable = r
            elif isinstance(n.func, ast.Name) and n.func.id in self.classes:
                info.own.add(n.func.id)

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
        """Every node of a forward-path function, not descending into @triton.jit kernels."""
        todo = [fr.node]
        while todo:
            node = todo.pop()
            yield node
            todo += [c for c in ast.iter_child_nodes(node) if id(c) not in self.jit_nodes]

    def _reach(self) -> None:
        seen: set[int] = set()
        work: list[FnRef] = []

        def add(owner: str | None, node: ast.AST | None, name: str) -> None:
            if node is None or id(node) in seen or id(node) in self.jit_nodes:
                return
            seen.add(id(node))
            me = None
            if owner and isinstance(node, FUNC_TYPES) and node.args.args and not any(
                    isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list):
                me = node.args.args[0].arg
            fr = FnRef(owner, node, f"{owner}.{name}" if owner else name, me)
            self.forward.append(fr)
            work.append(fr)

        def add_method(cls: str | None, name: str, skip_first: bool = False) -> None:
            found = self.find_method(cls, name, skip_first)
            if found:
                add(found[0], found[1], name)

        def add_class(cls: str) -> None:
            for m in ("__init__", "forward", "__call__"):
                add_method(cls, m)

        if "ModelNew" in self.classes:
            for m in ("forward", "__call__"):
                add_method("ModelNew", m)
            for stmt in self.classes["ModelNew"].body:  # forward = something
                if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in (
                        "forward", "__call__") for t in stmt.targets):
                    add("ModelNew", stmt.value, "forward")
        while work:
            fr = work.pop()
            for n in self.walk(fr):
                if isinstance(n, ast.Name) and n.id in self.functions:
                    add(None, self.functions[n.id], n.id)
                elif isinstance(n, ast.Name) and n.id in self.classes and n.id != fr.owner:
                    add_class(n.id)
                elif isinstance(n, ast.Attribute):
                    v = n.value
                    if isinstance(v, ast.Name) and fr.self_name and v.id == fr.self_name:
                        add_method(fr.owner, n.attr)
                        info = self.attr_info(fr.owner, n.attr)
                        for c in info.own if info else ():
                            add_class(c)
                        if info and info.func:
                            add(None, self.functions.get(info.func), info.func)
                    elif is_super_call(v):
                        add_method(fr.owner, n.attr, skip_first=True)
                    elif isinstance(v, ast.Name) and v.id in self.classes:
                        add_method(v.id, "forward" if n.attr == "apply" else n.attr)
                    elif isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) \
                            and v.value.id == fr.self_name:
                        info = self.attr_info(fr.owner, v.attr)
                        for c in info.own if info else ():
                            add_method(c, n.attr)
                    r = self.resolve(n) or ""
                    if r.startswith("torch.ops."):
                        key = "::".join(r.split(".")[2:4])
                        if key in self.custom_ops:
                            add(None, self.custom_ops[key], key)

    def launch_kind(self, n: ast.AST) -> str | None:
        """'triton' for ``kernel[grid](...)``, 'cuda' for a call into a load_inline module."""
        if not isinstance(n, ast.Call):
            return None
        f = n.func
        if isinstance(f, ast.Subscript) and self.references_jit(f.value):
            return "triton"
        if isinstance(f, ast.Attribute):
            if f.attr == "run" and self.references_jit(f.value):
                return "triton"
            if self.is_ext(f.value) and self.has_global_kernel:
                return "cuda"
            r = self.resolve(f) or ""
            if r.startswith("torch.ops.") and r.split(".")[2] not in ("aten", "prims") \
                    and self.has_torch_library and self.has_global_kernel:
                return "cuda"
        return None

    def qualname_of(self, fr: FnRef) -> str:
        return fr.qualname if fr.qualname.startswith("ModelNew.") else \
            f"{fr.qualname} (reached from ModelNew.forward)"
