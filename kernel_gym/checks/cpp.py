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
_NS_ALIAS = re.compile(r"\bnamespace\s+(\w+)\s*=\s*(?:torch|at|c10)\b")
_USING_NS = re.compile(r"\busing\s+namespace\s+(?:torch|at|c10)\b")
_USING_DECL = re.compile(r"\busing\s+(?:torch|at|c10)((?:::\w+)+)\s*;")
_METHOD_CALL = re.compile(r"(?:\.|->)\s*(\w+)\s*(?:<[^<>;()]*>)?\s*\(")
_PLAIN_CALL = re.compile(r"(?<![\w.:>])(\w+)\s*\(")


def cpp_sources(strings: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The string literals that look like C++/CUDA source, with their first line."""
    return [(text, line) for text, line in strings if any(m in text for m in CPP_MARKERS)]


def strip(text: str, keep_strings: bool = False) -> str:
    """Blank out comments (and string/char literals unless ``keep_strings``: inline PTX lives in
    them), keeping line breaks so that offsets keep their lines."""

    def blank(m: re.Match) -> str:
        s = m.group(0)
        if s.startswith(("\"", "'")):
            return s if keep_strings else s[0] + " " * (len(s) - 2) + s[-1]
        return re.sub(r"[^\n]", " ", s)

    return _COMMENT_OR_STRING.sub(blank, text)


def _line(text: str, pos: int, first: int) -> int:
    return first + text.count("\n", 0, pos)


def namespaced_calls(text: str, first: int) -> Iterator[tuple[str, str, int]]:
    """(full name like ``torch::matmul``, last component, line) for calls into torch::/at::/c10::
    (or a namespace alias of them), and for ``using torch::name;`` declarations."""
    code = strip(text)
    roots = ["torch", "at", "c10"] + _NS_ALIAS.findall(code)
    ns_call = re.compile(r"\b(?:" + "|".join(roots) + r")((?:::\w+)+)\s*(?:<[^<>;()]*>)?\s*\(")
    for m in list(ns_call.finditer(code)) + list(_USING_DECL.finditer(code)):
        path = m.group(0).split("(")[0].split("<")[0].replace("using", "").strip(" ;\n\t")
        yield path, path.rsplit("::", 1)[-1], _line(code, m.start(), first)


def uses_namespace(text: str) -> bool:
    """``using namespace torch;`` (or at/c10): unqualified calls may then be torch ops."""
    return bool(_USING_NS.search(strip(text)))


def method_calls(text: str, first: int) -> Iterator[tuple[str, int]]:
    code = strip(text)
    for m in _METHOD_CALL.finditer(code):
        yield m.group(1), _line(code, m.start(), first)


def plain_calls(text: str, first: int) -> Iterator[tuple[str, int]]:
    """Calls of unqualified functions (``cublasSgemm(``, ``getenv(``), with their line."""
    code = strip(text)
    for m in _PLAIN_CALL.finditer(code):
        yield m.group(1), _line(code, m.start(), first)


def search(pattern: re.Pattern, text: str, first: int, keep_strings: bool = False) -> Iterator[tuple[str, int]]:
    code = strip(text, keep_strings)
    for m in pattern.finditer(code):
        yield m.group(0), _line(code, m.start(), first)
