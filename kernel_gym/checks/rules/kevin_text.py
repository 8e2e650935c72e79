"""Rule ``kevin_text``: the Kevin paper's textual ban (kevin-strict preset only)."""

from __future__ import annotations

import ast

from ..context import Context
from ..registry import rule, violation

NAME = "kevin_text"
WHY = "the `kevin-strict` preset (Kevin's rule) rejects any"


@rule(NAME)
def check(ctx: Context):
    """Kevin's strict format rule: any ``pass`` statement, any ``try``/``except`` (Python), and any use
    of ``torch.nn.functional`` (import or reference) anywhere in the solution is a violation."""
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Pass):
            yield violation(NAME, node, f"{WHY} `pass`; leave no placeholder bodies (write the code or drop "
                            "the block).")
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            yield violation(NAME, node, f"{WHY} `try`/`except`; remove it and let errors propagate.")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [f"{node.module}.{a.name}" for a in node.names]
            if any(m.startswith("torch.nn.functional") for m in mods):
                yield violation(NAME, node, f"{WHY} use of `torch.nn.functional`; remove the import and do "
                                "the computation in your own kernels.")
        elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) and not (
                isinstance(ctx.parents.get(node), ast.Attribute) and ctx.parents[node].value is node):
            r = ctx.resolve(node) or ""
            if r.startswith("torch.nn.functional"):
                yield violation(NAME, node, f"{WHY} use of `torch.nn.functional` (`{r}`); do the "
                                "computation in your own kernels.")
