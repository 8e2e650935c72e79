"""What a solution class stores in ``self.<attr>``: torch.nn modules, own classes, torch callables."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .allowlists import NN_CONTAINERS, NN_NONCOMPUTE, torch_name_ok
from .astutil import COMPILER_CALLS

if TYPE_CHECKING:
    from .context import Context

FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class AttrInfo:
    """What ``self.<attr>`` was assigned in a class: torch.nn modules, own classes, callables."""

    torch_mods: set[str] = field(default_factory=set)
    own: set[str] = field(default_factory=set)
    torch_callable: str | None = None
    func: str | None = None


def class_attrs(ctx: Context, cls: ast.ClassDef) -> dict[str, AttrInfo]:
    """``self.X = ...`` (and ``add_module("X", ...)``) assignments in any method of ``cls``."""
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
                classify(ctx, out.setdefault(attr, AttrInfo()), value)
    return out


def classify(ctx: Context, info: AttrInfo, value: ast.expr) -> None:
    """Record what ``value`` (assigned to an attribute) holds."""
    if isinstance(value, (ast.Name, ast.Attribute)):
        r = ctx.resolve(value)
        if r and r.startswith("torch.") and not torch_name_ok(r, call=False):
            info.torch_callable = r
        if isinstance(value, ast.Name) and value.id in ctx.functions:
            info.func = value.id
    for n in ast.walk(value):
        if not isinstance(n, ast.Call):
            continue
        r = ctx.resolve(n.func) or ""
        last = r.rsplit(".", 1)[-1]
        if r.startswith("torch.nn.") and last[:1].isupper() and last not in NN_NONCOMPUTE \
                and last not in NN_CONTAINERS:
            info.torch_mods.add(last)
        elif r in COMPILER_CALLS:
            info.torch_callable = r
        elif isinstance(n.func, ast.Name) and n.func.id in ctx.classes:
            info.own.add(n.func.id)
