"""Structural signals of CUDA source (the `cuda_sources` of a solution), read from the text.

Every signal is a pattern over the source with comments removed; none compiles or runs it. Each says what it
looks for, and its limits are those of a pattern: code produced by macros or templates defined elsewhere is not
seen, and a feature written but never executed still counts.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from kernel_gym.pyast import parse_source
from kernel_gym.signals._linear import Linearizer, classify

FEATURES = {
    # __shared__ arrays, static or `extern __shared__` (dynamic).
    "shared_memory": re.compile(r"__shared__"),
    # Memory accessed through vector types: a pointer to float2/float4/int4/half2/... (a cast or a parameter),
    # __ldg/__ldcs on such a pointer, or PTX vector loads. __ldg alone (read-only path, scalar) does not count.
    "vectorized": re.compile(r"\b(?:float[24]|int[24]|uint[24]|double2|long2|longlong2|u?short[24]|char4|"
                             r"__half2|half2|__nv_bfloat162|nv_bfloat162)\s*(?:const\s*)?\*|ld\.global(?:\.\w+)*\.v[248]"),
    # Warp-level primitives: shuffles, votes, warp reductions, cooperative-groups or CUB warp/block reductions.
    "warp_primitives": re.compile(r"__shfl\w*|__ballot_sync|__any_sync|__all_sync|__reduce_\w+_sync|__match_\w+_sync|"
                                  r"\bcg::reduce\b|tiled_partition|WarpReduce|BlockReduce|\bshfl\.sync"),
    # Tensor cores: WMMA, mma.sync/wgmma PTX, ldmatrix, CUTLASS/CuTe MMA atoms.
    "tensor_cores": re.compile(r"\bwmma::|nvcuda::wmma|\bmma_sync\b|\bmma\.sync|\bwgmma|\bldmatrix|__hmma|"
                               r"SM\d+_\d+x\d+x\d+\w*|cute::gemm"),
    # Atomic read-modify-write on memory.
    "atomics": re.compile(r"\batomic(?:Add|Sub|Max|Min|CAS|Exch|And|Or|Xor|Inc|Dec)\w*\s*\(|\bred\.global|\batom\."),
}

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_KERNEL = re.compile(r"__global__[^;{]*?\b(\w+)\s*\(([^)]*)\)[^;{]*\{")
_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")
_SYNC = re.compile(r"__syncthreads\s*\(\s*\)|\bbar\.sync|__syncwarp\s*\(")
_HEADER_LOOP = re.compile(r"\b(?:for|while|do)\b")
_HEADER_BRANCH = re.compile(r"\b(?:if|else|switch)\b")
_ASSIGN = re.compile(r"(?:^|[;{}(])\s*(?:const\s+|unsigned\s+|signed\s+|long\s+)*(?:[\w:]+\s*\**\s+)?(\w+)\s*=\s*([^;=][^;]*);")
_SHARED_DECL = re.compile(r"__shared__[^;]*?\b(\w+)\s*\[")
_LOCAL_ARRAY = re.compile(r"\b(?:float|double|int|half|__half|unsigned|long|char|short|bool|float[24])\s+(\w+)\s*\[")
_SUBSCRIPT = re.compile(r"(?:reinterpret_cast\s*<[^>]*>\s*\(\s*(\w+)[^()]*\)|\b(\w+))\s*\[")
_THREAD = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*([xyz])\b")


def strip_comments(source: str) -> str:
    return _COMMENT.sub(" ", source)


def _matching(text: str, start: int, open_ch: str = "{", close_ch: str = "}") -> int:
    """Index just past the bracket closing the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


@dataclass
class Kernel:
    name: str
    params: str
    body: str
    pointer_params: set[str] = field(default_factory=set)


def kernels(source: str) -> list[Kernel]:
    """The `__global__` functions of comment-free CUDA source, with their bodies and pointer parameters."""
    out = []
    source = _BOUNDS.sub(lambda m: " " * len(m.group(0)), source)  # so the kernel's name is not taken from it
    for m in _KERNEL.finditer(source):
        body = source[m.end() - 1:_matching(source, m.end() - 1)]
        pointers = {p.split("*")[-1].strip().split()[-1] for p in m.group(2).split(",") if "*" in p and p.strip()}
        out.append(Kernel(m.group(1), m.group(2), body, {p for p in pointers if p.isidentifier()}))
    return out


def _enclosing(body: str, pos: int) -> list[str]:
    """Headers ("for (...)", "if (...)") of the blocks enclosing position `pos` of a kernel body."""
    stack: list[str] = []
    last = parens = 0
    for i, ch in enumerate(body[:pos]):
        if ch in "()":
            parens += 1 if ch == "(" else -1
        elif ch == "{":
            stack.append(body[last:i])
            last = i + 1
        elif ch == "}":
            if stack:
                stack.pop()
            last = i + 1
        elif ch == ";" and parens == 0:  # not the ';' inside for (...;...;...)
            last = i + 1
    return stack


def sync_placement(kernel: Kernel, lane_vars: set[str]) -> tuple[bool, bool]:
    """(a barrier inside a loop, a barrier inside a branch whose condition depends on the thread index)."""
    in_loop = in_branch = False
    for m in _SYNC.finditer(kernel.body):
        headers = _enclosing(kernel.body, m.start())
        in_loop |= any(_HEADER_LOOP.search(h) for h in headers)
        for h in headers:
            if _HEADER_BRANCH.search(h) and ("threadIdx" in h
                                             or any(re.search(rf"\b{re.escape(v)}\b", h) for v in lane_vars)):
                in_branch = True
    return in_loop, in_branch


def to_python(expr: str) -> ast.AST | None:
    """A C index expression as a Python AST (threadIdx.x -> threadIdx_x, casts dropped, / -> //), or None."""
    text = _THREAD.sub(lambda m: f"{m.group(1)}_{m.group(2)}", expr)
    text = re.sub(r"static_cast\s*<[^>]*>|\(\s*(?:const\s+)?(?:unsigned\s+)?(?:int|long|size_t|int64_t|int32_t|"
                  r"long long|float|double)\s*\)", "", text)
    text = re.sub(r"(\d+(?:\.\d*)?)(?:[uUlLfF]+)\b", r"\1", text).replace("/", "//").replace("->", ".")
    text = text.replace("&&", " and ").replace("||", " or ").replace("!", " not ").replace(" not =", "!=")
    try:
        return parse_source(text.strip(), mode="eval").body
    except SyntaxError:
        return None


def _defs(body: str) -> dict[str, ast.AST]:
    """Last simple assignment of each name in a kernel body, as Python ASTs."""
    out: dict[str, ast.AST] = {}
    for name, expr in _ASSIGN.findall(body):
        node = to_python(expr)
        if node is not None:
            out[name] = node
    return out


def _is_lane(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "threadIdx_x"


def global_accesses(kernel: Kernel) -> list[tuple[str, str]]:
    """(indexed expression, 'coalesced' | 'strided' | 'unknown') for each subscript of a global pointer whose
    index depends on threadIdx.x. Shared and local arrays are skipped."""
    local = set(_SHARED_DECL.findall(kernel.body)) | set(_LOCAL_ARRAY.findall(kernel.body))
    aliases = {name for name, expr in _ASSIGN.findall(kernel.body)
               if any(re.search(rf"\b{re.escape(p)}\b", expr) for p in kernel.pointer_params) and "[" not in expr}
    pointers = (kernel.pointer_params | aliases) - local
    lin = Linearizer(_is_lane, _defs(kernel.body))
    out = []
    for m in _SUBSCRIPT.finditer(kernel.body):
        name = m.group(1) or m.group(2)
        if name not in pointers:
            continue
        end = _matching(kernel.body, m.end() - 1, "[", "]")
        index = kernel.body[m.end():end - 1]
        node = to_python(index)
        kind = classify(lin.lane_terms(node) if node is not None else None, name_is_stride=False)
        if kind:
            out.append((f"{name}[{index.strip()}]", kind))
    return out


def lane_variables(kernel: Kernel) -> set[str]:
    """Names whose value depends on threadIdx (directly or through other such names)."""
    found: set[str] = set()
    assigns = _ASSIGN.findall(kernel.body)
    for _ in range(4):
        for name, expr in assigns:
            if "threadIdx" in expr or any(re.search(rf"\b{re.escape(v)}\b", expr) for v in found):
                found.add(name)
    return found


def cuda_structure(source: str) -> dict[str, float]:
    """struct_* signals of CUDA source (see docs/signals.md)."""
    text = strip_comments(source)
    signals = {f"struct_{name}": float(bool(rx.search(text))) for name, rx in FEATURES.items()}
    in_loop = in_branch = False
    accesses: list[tuple[str, str]] = []
    for k in kernels(text):
        loop, branch = sync_placement(k, lane_variables(k))
        in_loop, in_branch = in_loop or loop, in_branch or branch
        accesses += global_accesses(k)
    signals["struct_sync_in_loop"] = float(in_loop)
    signals["struct_sync_in_branch"] = float(in_branch)
    signals.update(coalescing_signals(accesses))
    return signals


def coalescing_signals(accesses: list[tuple[str, str]]) -> dict[str, float]:
    """struct_coalesced: share of the classified accesses that are coalesced (absent when none is classified);
    struct_uncoalesced: how many are strided."""
    known = [kind for _, kind in accesses if kind != "unknown"]
    out = {"struct_uncoalesced": float(known.count("strided"))}
    if known:
        out["struct_coalesced"] = round(known.count("coalesced") / len(known), 4)
    return out
