"""C parameter lists and CUDA kernels' signatures read from source text, for the two places that call C from
Python: C tasks (`kernel_gym.tasks.c_task`, ctypes) and raw CUDA kernels (`kernel_gym.cuda_raw`, the driver API),
and for the static rules that read a raw CUDA source."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

QUALIFIERS = frozenset({"const", "volatile", "restrict", "__restrict", "__restrict__"})


@dataclass(frozen=True)
class CParam:
    name: str  # "" for an unnamed parameter
    ctype: str  # the type without qualifiers, e.g. "float" (the pointee for pointers)
    pointer: bool
    const: bool


def parse_params(params: str, ignore: Iterable[str] = ()) -> list[CParam]:
    """The parameters of a C parameter list ("const float* __restrict__ x, int n"); `void` and empty give none.
    `ignore` names further words to drop from the type (e.g. "signed")."""
    drop = QUALIFIERS | set(ignore)
    out = []
    for raw in (p.strip() for p in params.split(",")):
        if not raw or raw == "void":
            continue
        pointer = "*" in raw or "[" in raw
        words = re.sub(r"\[[^\]]*\]|[*&]", " ", raw).split()
        const = "const" in words
        words = [w for w in words if w not in drop]
        name, ctype = (words[-1], " ".join(words[:-1])) if len(words) > 1 else ("", " ".join(words))
        out.append(CParam(name, ctype, pointer, const))
    return out


_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_GLOBAL = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
                     r"(\w+)\s*\(([^)]*)\)")


def kernel_signatures(source: str) -> dict[str, tuple[CParam, ...]]:
    """`__global__` function name -> its parameters, read from the source (templates are not supported)."""
    return {m.group(1): tuple(parse_params(m.group(2), ignore=("signed", "struct")))
            for m in _GLOBAL.finditer(_COMMENTS.sub(" ", source))}
