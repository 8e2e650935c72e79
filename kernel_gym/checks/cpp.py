"""C++/CUDA sources inside the solution's string literals (``load_inline(cpp_sources=..., cuda_sources=...)``).

Python is analysed with ``ast``; C++ has no parser here, so these helpers scan the C++ text with
regular expressions after removing comments and C++ string literals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

CPP_MARKERS = ("#include", "__global__", "__device__", "torch::", "at::", "c10::", "PYBIND11_MODULE",
               "TORCH_LIBRARY", "<<<", "cudaStream", "cublas", "cudnn", "blockIdx", "threadIdx")

_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_NS_CALL = re.compile(r"\b(?:torch|at|c10)((?:::\w+)+)\s*(?:<[^<>;()]*>)?\s*\(")
_METHOD_CALL = re.compile(r"(?:\.|->)\s*(\w+)\s*(?:<[^<>;()]*>)?\s*\(")
_PLAIN_CALL = re.compile(r"(?<![\w.:>])(\w+)\s*\(")


def cpp_sources(strings: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The string literals that look like C++/CUDA source, with their first line."""
    return [(text, line) for text, line in strings if any(m in text for m in CPP_MARKERS)]


def strip(text: str) -> str:
    """Blank out comments and string/char literals, keeping line breaks (so offsets keep lines)."""

    def blank(m: re.Match) -> str:
        s = m.group(0)
        if s.startswith(("\"", "'")):
            return s[0] + " " * (len(s) - 2) + s[-1]
        return re.sub(r"[^\n]", " ", s)

    return _COMMENT_OR_STRING.sub(blank, text)


def _line(text: str, pos: int, first: int) -> int:
    return first + text.count("\n", 0, pos)


def namespaced_calls(text: str, first: int) -> Iterator[tuple[str, str, int]]:
    """(full name like ``torch::matmul``, last component, line) for torch::/at::/c10:: calls."""
    code = strip(text)
    for m in _NS_CALL.finditer(code):
        path = m.group(0).split("(")[0].split("<")[0].strip()
        yield path, path.rsplit("::", 1)[-1], _line(code, m.start(), first)


def method_calls(text: str, first: int) -> Iterator[tuple[str, int]]:
    code = strip(text)
    for m in _METHOD_CALL.finditer(code):
        yield m.group(1), _line(code, m.start(), first)


def plain_calls(text: str, first: int) -> Iterator[tuple[str, int]]:
    """Calls of unqualified functions (``cublasSgemm(``, ``getenv(``), with their line."""
    code = strip(text)
    for m in _PLAIN_CALL.finditer(code):
        yield m.group(1), _line(code, m.start(), first)


def search(pattern: re.Pattern, text: str, first: int) -> Iterator[tuple[str, int]]:
    code = strip(text)
    for m in pattern.finditer(code):
        yield m.group(0), _line(code, m.start(), first)
