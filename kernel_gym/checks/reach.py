"""The forward path: ModelNew.forward and every solution function/method it reaches."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .astutil import is_super_call

if TYPE_CHECKING:
    from .context import Context

FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class FnRef:
    """A function on the forward path, with the class it belongs to (for ``self``)."""

    owner: str | None
    node: ast.AST
    qualname: str
    self_name: str | None


def forward_path(ctx: Context) -> list[FnRef]:
    """Functions reachable from ModelNew.forward/__call__ through names, self.<method>, own
    submodules, ``Cls.apply`` and ``super()``, and the host code of CuTe DSL and TileLang kernels (their JIT
    functions and factories, wherever they are called from); @triton.jit kernels, CuTe DSL kernels and TileLang
    prim_funcs (device code) are not entered."""
    walk = _PathWalk(ctx)
    if "ModelNew" in ctx.classes:
        for m in ("forward", "__call__"):
            walk.add_method("ModelNew", m)
        for stmt in ctx.classes["ModelNew"].body:  # forward = something
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in (
                    "forward", "__call__") for t in stmt.targets):
                walk.add("ModelNew", stmt.value, "forward")
        for owner, node, name in ctx.dsl.host_functions():
            walk.add(owner, node, name)
    while walk.work:
        fr = walk.work.pop()
        for n in ctx.walk(fr):
            walk.visit(fr, n)
    return walk.out


class _PathWalk:
    """The functions found so far (`out`, in the order found) and those still to enter (`work`)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.out: list[FnRef] = []
        self.seen: set[int] = set()
        self.work: list[FnRef] = []

    def add(self, owner: str | None, node: ast.AST | None, name: str) -> None:
        if node is None or id(node) in self.seen or id(node) in self.ctx.jit_nodes or id(node) in self.ctx.device_nodes:
            return
        self.seen.add(id(node))
        me = None
        if owner and isinstance(node, FUNC_TYPES) and node.args.args and not any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list):
            me = node.args.args[0].arg
        fr = FnRef(owner, node, f"{owner}.{name}" if owner else name, me)
        self.out.append(fr)
        self.work.append(fr)

    def add_method(self, cls: str | None, name: str, skip_first: bool = False) -> None:
        found = self.ctx.find_method(cls, name, skip_first)
        if found:
            self.add(found[0], found[1], name)

    def add_class(self, cls: str, constructed: bool = True) -> None:
        """A class used on the forward path: its forward/__call__, and its __init__ only where the forward path
        may construct it (an instance built in ModelNew.__init__ and held in self ran its __init__ then)."""
        for m in ("__init__", "forward", "__call__") if constructed else ("forward", "__call__"):
            self.add_method(cls, m)

    def visit(self, fr: FnRef, n: ast.AST) -> None:
        """What node `n` of function `fr` reaches: a solution function or class named, a method through self,
        super() or a class, a submodule's method, a custom op."""
        ctx = self.ctx
        if isinstance(n, ast.Name) and n.id in ctx.functions:
            self.add(None, ctx.functions[n.id], n.id)
        elif isinstance(n, ast.Name) and n.id in ctx.classes and n.id != fr.owner:
            self.add_class(n.id)
        elif isinstance(n, ast.Attribute):
            self.visit_attribute(fr, n)

    def visit_attribute(self, fr: FnRef, n: ast.Attribute) -> None:
        ctx = self.ctx
        v = n.value
        if isinstance(v, ast.Name) and fr.self_name and v.id == fr.self_name:
            self.add_method(fr.owner, n.attr)
            info = ctx.attr_info(fr.owner, n.attr)
            for c in info.own if info else ():
                self.add_class(c, constructed=False)
            if info and info.func:
                self.add(None, ctx.functions.get(info.func), info.func)
        elif is_super_call(v):
            self.add_method(fr.owner, n.attr, skip_first=True)
        elif isinstance(v, ast.Name) and v.id in ctx.classes:
            self.add_method(v.id, "forward" if n.attr == "apply" else n.attr)
        elif isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) \
                and v.value.id == fr.self_name:
            info = ctx.attr_info(fr.owner, v.attr)
            for c in info.own if info else ():
                self.add_method(c, n.attr)
        r = ctx.resolve(n) or ""
        if r.startswith("torch.ops."):
            key = "::".join(r.split(".")[2:4])
            if key in ctx.custom_ops:
                self.add(None, ctx.custom_ops[key], key)
