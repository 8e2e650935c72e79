"""Threads per block and dynamic shared memory of CUDA kernels, read from the source (a heuristic).

A CUDA kernel's block size is a launch argument, decided by host code at run time, so it is not in the binary.
It is read from the source, in this order:
1. `__launch_bounds__(N, ...)` on the kernel: N (the most threads a launch may use; a launch may use fewer).
2. The launch sites `kernel<<<grid, block[, smem[, stream]]>>>`: `block` and `smem` are evaluated when they are
   integer literals, `dim3(x, y, z)`, arithmetic over them (`+ - * / % << >>`, `sizeof` of scalar types,
   `min`/`max`), or names defined once in the source as such (`const int threads = 256;`, `constexpr`,
   `#define BLOCK 256`, `dim3 block(16, 16);`). Launch sites of one kernel with different sizes: the largest.
Anything else (a size computed from tensor shapes, a value passed in from Python) is unknown, and the kernel's
occupancy is then not reported. Dynamic shared memory that cannot be evaluated counts as 0.
"""

from __future__ import annotations

import ast
import operator
import re

from kernel_gym.pyast import parse_source

_SIZEOF = {"char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1, "short": 2, "half": 2, "__half": 2, "at::Half": 2,
           "__nv_bfloat16": 2, "at::BFloat16": 2, "int": 4, "float": 4, "unsigned": 4, "int32_t": 4, "uint32_t": 4,
           "unsigned int": 4, "double": 8, "long": 8, "int64_t": 8, "uint64_t": 8, "size_t": 8, "long long": 8,
           "float2": 8, "half2": 4, "__half2": 4, "float4": 16, "int4": 16, "double2": 16}
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod, ast.LShift: operator.lshift, ast.RShift: operator.rshift}

_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)\s+([^\n]+)$", re.M)
_ASSIGN = re.compile(r"(?:const(?:expr)?\s+|static\s+)*(?:unsigned\s+)?(?:int|long|size_t|int32_t|int64_t|"
                     r"uint32_t|auto)\s+(\w+)\s*=\s*([^;,{]+);")
_DIM3 = re.compile(r"\bdim3\s+(\w+)\s*(?:\(([^;]*)\)|=\s*dim3\s*\(([^;]*)\)|\{([^;]*)\})\s*;")
_BOUNDS = re.compile(r"__launch_bounds__\s*\(\s*([^,)]+)[^)]*\)\s*(?:\w+\s+)*?(\w+)\s*\(")
_LAUNCH = re.compile(r"\b(\w+)\s*(?:<[^<>;]*>)?\s*<<<(.*?)>>>", re.S)


def _definitions(source: str) -> dict[str, str | None]:
    """name -> defining expression; None when a name is defined more than once with different values."""
    defs: dict[str, str | None] = {}

    def add(name: str, expr: str) -> None:
        expr = expr.strip()
        defs[name] = expr if defs.get(name, expr) == expr else None

    for name, expr in _DEFINE.findall(source):
        add(name, expr.split("//")[0])
    for name, expr in _ASSIGN.findall(source):
        add(name, expr)
    for name, *args in _DIM3.findall(source):
        add(name, "dim3(" + next((a for a in args if a), "") + ")")
    return defs


def _split_args(text: str) -> list[str]:
    """Split at top-level commas (not inside parentheses or template brackets)."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _to_python(expr: str) -> str:
    expr = re.sub(r"sizeof\s*\(\s*([\w:\s]+?)\s*\)", lambda m: str(_SIZEOF.get(m.group(1).strip(), "?")), expr)
    expr = re.sub(r"static_cast\s*<[^>]*>|\((?:unsigned\s+)?(?:int|long|size_t|float|unsigned)\)", "", expr)
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr)
    return expr.replace("/", "//").replace("std::", "")


def evaluate(expr: str, defs: dict[str, str | None], depth: int = 0) -> int | None:
    """The integer value of a C expression over literals and defined names (dim3 -> x*y*z), or None."""
    if depth > 8:
        return None
    try:
        tree = parse_source(_to_python(expr).strip(), mode="eval").body
    except SyntaxError:
        return None

    def ev(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            text = defs.get(node.id)
            return evaluate(text, defs, depth + 1) if text else None
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            a, b = ev(node.left), ev(node.right)
            if a is None or b is None or (isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0):
                return None
            return _OPS[type(node.op)](a, b)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            values = [ev(a) for a in node.args]
            if None in values or not values:
                return None
            if node.func.id == "dim3":
                out = 1
                for v in values:
                    out *= v
                return out
            if node.func.id in ("min", "max"):
                return (min if node.func.id == "min" else max)(values)
        return None

    value = ev(tree)
    return value if isinstance(value, int) else None


def launch_configs(source: str) -> dict[str, tuple[int | None, int]]:
    """kernel name -> (threads per block or None, dynamic shared memory bytes) for the kernels it can read."""
    defs = _definitions(source)
    out: dict[str, tuple[int | None, int]] = {}
    for name, args in ((m.group(1), _split_args(m.group(2))) for m in _LAUNCH.finditer(source)):
        threads = evaluate(args[1], defs) if len(args) > 1 else None
        smem = (evaluate(args[2], defs) or 0) if len(args) > 2 else 0
        old_threads, old_smem = out.get(name, (None, 0))
        if old_threads is not None and threads is not None:
            threads = max(threads, old_threads)
        out[name] = (threads if threads is not None else old_threads, max(smem, old_smem))
    for limit, name in _BOUNDS.findall(source):
        value = evaluate(limit, defs)
        if value is not None:
            out[name] = (value, out.get(name, (None, 0))[1])
    return out
