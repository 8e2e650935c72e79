"""Structural signals of Triton kernels (the `@triton.jit` functions of a solution), read from the Python AST.

Triton decides shared memory, vectorisation, warp shuffles and tensor-core use itself; these signals say which
source constructs make it use them, not what the compiler finally emitted (the compile-time signals are that).
"""

from __future__ import annotations

import ast

from kernel_gym.pyast import parse_source
from kernel_gym.signals._linear import Linearizer, classify

_REDUCTIONS = {"sum", "max", "min", "reduce", "argmax", "argmin", "xor_sum", "cumsum", "cumprod",
               "associative_scan", "sort", "histogram", "topk"}
_LANGUAGE_ROOTS = {"tl", "triton", "language"}


def _decorated_jit(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "jit":
            return True
    return False


def jit_functions(tree: ast.AST) -> list[ast.FunctionDef]:
    """Every function decorated with `@triton.jit` / `@jit` (with or without arguments)."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and _decorated_jit(n)]


def _tl_name(call: ast.Call) -> str | None:
    """'dot' for tl.dot(...), triton.language.dot(...); 'sum' for x.sum(...) (a tensor method); else None."""
    f = call.func
    if not isinstance(f, ast.Attribute):
        return None
    root = f.value
    while isinstance(root, ast.Attribute):
        root = root.value
    if isinstance(root, ast.Name) and root.id in _LANGUAGE_ROOTS:
        return f.attr
    return f.attr if f.attr in _REDUCTIONS else None


def _is_arange(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _tl_name(node) == "arange"


def _passthrough(node: ast.AST) -> ast.AST | None:
    """Broadcasts (`x[:, None]`), casts (`x.to(tl.int64)`) and tl.multiple_of/max_contiguous keep the lanes."""
    if isinstance(node, ast.Subscript):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "to":
            return node.func.value
        if _tl_name(node) in ("multiple_of", "max_contiguous", "max_constancy", "cast") and node.args:
            return node.args[0]
    return None


def _assignments(fn: ast.FunctionDef) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def _in_loop(fn: ast.FunctionDef, target: ast.AST) -> bool:
    for loop in (n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While))):
        if any(n is target for n in ast.walk(loop)):
            return True
    return False


def memory_accesses(fn: ast.FunctionDef) -> list[tuple[str, str]]:
    """(pointer expression, 'coalesced' | 'strided' | 'unknown') for each tl.load/tl.store whose offsets are a
    block of lanes (tl.arange). A lane term with coefficient 1 on any axis is coalesced (Triton's coalescing pass
    orders the layout by the contiguous axis); multiplied by a literal > 1 it is strided; multiplied by a kernel
    argument it is unknown (a stride argument equal to 1 is specialised by Triton and is then contiguous)."""
    lin = Linearizer(_is_arange, _assignments(fn), _passthrough)
    out = []
    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call) and _tl_name(n) in ("load", "store")):
        pointer = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "pointer"), None)
        if pointer is None:
            continue
        kind = classify(lin.lane_terms(pointer), name_is_stride=True)
        if kind:
            out.append((ast.unparse(pointer), kind))
    return out


def triton_structure(code: str) -> dict[str, float]:
    """struct_* signals of a solution's Triton kernels (see docs/signals.md); {} when it has none or does not parse."""
    from kernel_gym.signals.structure_cuda import coalescing_signals

    try:
        tree = parse_source(code)
    except SyntaxError:
        return {}
    fns = jit_functions(tree)
    if not fns:
        return {}
    calls = [(fn, n, _tl_name(n)) for fn in fns for n in ast.walk(fn) if isinstance(n, ast.Call)]
    names = {name for _, _, name in calls if name}
    accesses = [a for fn in fns for a in memory_accesses(fn)]
    reductions = bool(names & _REDUCTIONS)
    return {
        "struct_shared_memory": float("dot" in names or reductions or bool(names & {"trans", "permute"})),
        "struct_vectorized": float(any(kind == "coalesced" for _, kind in accesses)
                                   or bool(names & {"multiple_of", "max_contiguous"})),
        "struct_warp_primitives": float(reductions),
        "struct_tensor_cores": float(bool(names & {"dot", "dot_scaled"})),
        "struct_atomics": float(any(n.startswith("atomic_") for n in names)),
        "struct_sync_in_loop": float(any(name == "debug_barrier" and _in_loop(fn, n) for fn, n, name in calls)),
        "struct_sync_in_branch": 0.0,
        **coalescing_signals(accesses),
    }
