"""The linear form of an index expression, for the coalescing heuristics of CUDA and Triton code.

An index (a C array subscript, a Triton pointer offset) is read as a sum of terms. What matters is how the
*lane* variable (CUDA: `threadIdx.x`; Triton: `tl.arange`, the vector of lanes) enters it: with coefficient 1
(neighbouring threads touch neighbouring elements: coalesced), multiplied by a literal > 1 (a fixed stride),
multiplied by a name (a runtime size or stride), or non-linearly (`//`, `%`, a product of two lane terms).
Names are substituted by their assignments (depth-limited), so `i = blockIdx.x * blockDim.x + threadIdx.x;
y[i]` is read through `i`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

# Coefficient kinds of a lane term, by how much they say about the access (later = less known).
ONE, CONST, NAME, NONLINEAR = "one", "const", "name", "nonlinear"
_RANK = {ONE: 0, CONST: 1, NAME: 2, NONLINEAR: 3}
MAX_DEPTH = 8


def _worse(a: str, b: str) -> str:
    return a if _RANK[a] >= _RANK[b] else b


class Linearizer:
    """Lane terms of expressions, given what a lane is and the assignments to substitute."""

    def __init__(self, is_lane: Callable[[ast.AST], bool], defs: Mapping[str, ast.AST],
                 passthrough: Callable[[ast.AST], ast.AST | None] = lambda node: None):
        self.is_lane, self.defs, self.passthrough = is_lane, defs, passthrough

    def lane_terms(self, node: ast.AST, depth: int = 0) -> list[str] | None:
        """The coefficient kind of each lane term of `node` ([] when no lane enters it); None when unreadable.
        `depth` counts name substitutions (a self-referencing assignment stops at MAX_DEPTH)."""
        if depth > MAX_DEPTH:
            return None
        if self.is_lane(node):
            return [ONE]
        inner = self.passthrough(node)
        if inner is not None:
            return self.lane_terms(inner, depth)
        if isinstance(node, ast.Name):
            d = self.defs.get(node.id)
            return self.lane_terms(d, depth + 1) if d is not None else []
        if isinstance(node, ast.Constant):
            return []
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self.lane_terms(node.operand, depth)
        if isinstance(node, ast.BinOp):
            return self._binop(node, depth)
        found = [self.lane_terms(c, depth) for c in ast.iter_child_nodes(node)]
        if any(f is None for f in found):
            return None
        return [NONLINEAR] if any(found) else []

    def _binop(self, node: ast.BinOp, depth: int) -> list[str] | None:
        left, right = self.lane_terms(node.left, depth), self.lane_terms(node.right, depth)
        if left is None or right is None:
            return None
        if isinstance(node.op, (ast.Add, ast.Sub)):
            return left + right
        if not left and not right:
            return []
        if isinstance(node.op, ast.Mult) and bool(left) != bool(right):
            terms, factor = (left, node.right) if left else (right, node.left)
            kind = self._factor_kind(factor)
            return [t if kind == ONE else _worse(t, kind) for t in terms]
        if isinstance(node.op, ast.LShift) and left and not right:
            kind = self._factor_kind(node.right, shift=True)
            return [t if kind == ONE else _worse(t, kind) for t in left]
        return [NONLINEAR]

    def _factor_kind(self, factor: ast.AST, shift: bool = False) -> str:
        value = self._constant(factor)
        if value is not None:
            return ONE if value == (0 if shift else 1) else CONST
        return NAME

    def _constant(self, node: ast.AST, depth: int = 0) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name) and depth < MAX_DEPTH and node.id in self.defs:
            return self._constant(self.defs[node.id], depth + 1)
        return None


def classify(terms: list[str] | None, name_is_stride: bool) -> str:
    """'coalesced', 'strided' or 'unknown' for the lane terms of one access; '' when no lane enters it.

    A unit-coefficient lane term makes the access coalesced. Otherwise a literal stride makes it strided, and a
    name stride does too unless `name_is_stride` says names may be 1 at run time (Triton's stride arguments)."""
    if terms is None:
        return "unknown"
    if not terms:
        return ""
    if ONE in terms:
        return "coalesced"
    if NONLINEAR in terms:
        return "unknown"
    if NAME in terms:
        return "unknown" if name_is_stride else "strided"
    return "strided"
