"""Small AST helpers shared by the rules: import-alias resolution, parents, string literals."""

from __future__ import annotations

import ast
from collections.abc import Iterator

COMPILER_CALLS = ("torch.compile", "torch.jit.script", "torch.jit.trace", "torch._dynamo.optimize")


class Names:
    """Maps local names to the dotted names they were imported as (``F`` -> ``torch.nn.functional``)."""

    def __init__(self, tree: ast.Module):
        self.aliases: dict[str, str] = {}
        self.star_imports: list[tuple[str, int]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        root = a.name.split(".")[0]
                        self.aliases[root] = root
            elif isinstance(node, ast.ImportFrom):
                mod = "." * node.level + (node.module or "")
                for a in node.names:
                    if a.name == "*":
                        self.star_imports.append((mod, node.lineno))
                    else:
                        self.aliases[a.asname or a.name] = f"{mod}.{a.name}" if mod else a.name
        # module-level aliases: E = torch.cuda.Event ; fast = torch.compile(fn)
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign):
                value = stmt.value
                res = self.resolve(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
                if isinstance(value, ast.Call) and self.resolve(value.func) in COMPILER_CALLS:
                    res = self.resolve(value.func)
                if res:
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            self.aliases[t.id] = res

    def resolve(self, node: ast.AST | None) -> str | None:
        """Dotted name of a Name/Attribute chain rooted at an import, else None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None


def parent_map(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    parents: dict[ast.AST, ast.AST] = {}
    for p in ast.walk(tree):
        for c in ast.iter_child_nodes(p):
            parents[c] = p
    return parents


def docstring_nodes(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                ids.add(id(body[0].value))
    return ids


def string_literals(tree: ast.AST, parents: dict, skip: set[int]) -> Iterator[tuple[str, int]]:
    """Every str literal (f-strings joined, placeholders as ``0``) but docstrings, with its line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in skip or isinstance(parents.get(node), ast.JoinedStr):
                continue
            yield node.value, node.lineno
        elif isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else "0" for v in node.values]
            yield "".join(str(p) for p in parts), node.lineno


def is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def always_raises(stmts: list[ast.stmt]) -> bool:
    """True when every path through ``stmts`` ends in ``raise``."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Raise):
        return True
    if isinstance(last, ast.If):
        return always_raises(last.body) and always_raises(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return always_raises(last.body)
    return False


def call_name(node: ast.AST) -> str:
    """A short printable name for a callee expression (for messages)."""
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every parsed node
        return "<expr>"
    return text if len(text) <= 60 else text[:57] + "..."
