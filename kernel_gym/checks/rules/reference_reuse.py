"""Rule ``reference_reuse``: the solution must not reuse the reference program."""

from __future__ import annotations

import ast

from ..astutil import is_super_call
from ..context import Context
from ..registry import rule, violation

NAME = "reference_reuse"
REF_NAMES = frozenset({"Model", "get_inputs", "get_init_inputs"})
REF_CALLEES = REF_NAMES | {"reference", "ref_model", "reference_model", "reference_forward", "ref_forward"}
REF_MODULES = frozenset({"__main__", "reference", "ref", "task", "problem", "kernelbench", "KernelBench",
                         "src", "tasks"})
FIX = ("Write ModelNew as an independent nn.Module that computes the result with your own kernels; "
       "it must not inherit from, import, construct or call the reference `Model`.")


def _base_names(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


@rule(NAME)
def check(ctx: Context):
    """ModelNew must not reuse the reference: no class inheriting from anything named ``Model``
    (directly or through another class of the solution); no ``super().forward`` chaining; no import
    of ``Model``/``get_inputs``/``get_init_inputs`` or of a reference-like module (``__main__``,
    ``reference``, ``task``, ``kernelbench``...); no call of ``Model(...)``, ``get_inputs()``,
    ``get_init_inputs()`` or of a ``reference``/``ref_model`` callable anywhere in the solution."""
    for cls, node in ctx.classes.items():
        for b in node.bases:
            if _base_names(b) == "Model":
                yield violation(NAME, node, f"`class {cls}({ast.unparse(b)})` inherits from the reference "
                                f"Model. {FIX}")
    if "ModelNew" in ctx.classes:
        chain = ctx.mro("ModelNew")
        for c in chain:
            for b in ctx.classes[c].bases:
                if c != "ModelNew" and _base_names(b) == "Model":
                    yield violation(NAME, ctx.classes["ModelNew"], f"ModelNew inherits from {c}, which "
                                    f"inherits from the reference Model. {FIX}")
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Attribute) and node.attr in ("forward", "__call__") and is_super_call(node.value):
            owner = _enclosing_class(ctx, node)
            if owner and owner in ctx.classes and not _own_parent_has(ctx, owner, node.attr):
                yield violation(NAME, node, f"`super().{node.attr}(...)` in {owner} runs the parent "
                                f"class's (the reference's) computation. {FIX}")
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            for a in node.names:
                if a.name in REF_NAMES:
                    yield violation(NAME, node, f"`from {'.' * node.level}{mod} import {a.name}` imports "
                                    f"the reference program. {FIX}")
            if node.level or mod.split(".")[0] in REF_MODULES:
                yield violation(NAME, node, f"importing from `{'.' * node.level}{mod}` may load the "
                                f"reference/task module; import only torch, triton and the standard library. {FIX}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in REF_MODULES:
                    yield violation(NAME, node, f"`import {a.name}` may load the reference/task module. {FIX}")
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in REF_CALLEES:
                yield violation(NAME, node, f"the call `{ast.unparse(f)}(...)` uses the reference program "
                                f"or its input generator. {FIX}")
        elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) \
                and (node.id if isinstance(node, ast.Name) else node.attr) in REF_NAMES:
            parent = ctx.parents.get(node)
            in_bases = isinstance(parent, ast.ClassDef) and node in parent.bases
            called = isinstance(parent, ast.Call) and parent.func is node
            if not in_bases and not called:
                yield violation(NAME, node, f"`{ast.unparse(node)}` refers to the reference program. {FIX}")


def _enclosing_class(ctx: Context, node: ast.AST) -> str | None:
    while node in ctx.parents:
        node = ctx.parents[node]
        if isinstance(node, ast.ClassDef):
            return node.name
    return None


def _own_parent_has(ctx: Context, cls: str, meth: str) -> bool:
    """super().forward is fine when the parent is another class of the solution (not nn.Module)."""
    return ctx.find_method(cls, meth, skip_first=True) is not None and all(
        _base_names(b) != "Model" for c in ctx.mro(cls) for b in ctx.classes[c].bases)
