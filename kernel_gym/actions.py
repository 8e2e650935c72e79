"""Response text -> (reasoning, code, backend), or a format error the agent can act on.

The code is the response's last fenced code block; the reasoning is the text around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernel_gym.backends import NAMES
from kernel_gym.pyast import parse_source

DEFAULT_MAX_RESPONSE_CHARS = 1_000_000
DEFAULT_MAX_CODE_CHARS = 100_000

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
_TRITON = re.compile(r"@\s*triton\.(jit|autotune|heuristics)|import\s+triton")
_CUDA = re.compile(r"load_inline|__global__|cpp_extension")
_RAW = re.compile(r"\bkernel_gym\.cuda_raw\b|from\s+kernel_gym\s+import\s+[^\n]*\bcuda_raw\b")
_HELION = re.compile(r"^\s*(?:import\s+helion\b|from\s+helion\b)|@\s*helion\.(?:kernel|jit)\b", re.MULTILINE)
# CuTe DSL: `import cutlass[.cute]` (`cutlass_cppgen`, the C++ headers' package, is not), `@cute.kernel`/`@cute.jit`
_CUTE_DSL = re.compile(r"^\s*(?:import\s+cutlass\b|from\s+cutlass\b)|@\s*cute\.(?:kernel|jit)\b", re.MULTILINE)
_TILELANG = re.compile(r"^\s*(?:import\s+tilelang\b|from\s+tilelang\b)|@\s*(?:T\.prim_func|tilelang\.jit)\b",
                       re.MULTILINE)
_BACKENDS = NAMES


@dataclass(frozen=True)
class ParsedAction:
    """A response split into its parts. `error` is None when the code can go on to the checks."""

    reasoning: str
    code: str | None
    backend: str | None
    code_span: tuple[int, int] | None  # character span of the code inside the response
    language: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class _Block:
    fence_start: int  # where the opening fence line starts
    start: int  # where the code starts
    end: int  # where the code ends
    fence_end: int  # just after the closing fence line
    language: str
    closed: bool


def _blocks(text: str) -> list[_Block]:
    """Fenced blocks in order; a fence closes only with the same character and at least its length."""
    blocks, pos, opened = [], 0, None
    for line in text.splitlines(keepends=True):
        m = _FENCE.match(line)
        if opened is None and m:
            opened = (m.group(1), pos, pos + len(line), m.group(2).lower())
        elif opened is not None and m and m.group(1)[0] == opened[0][0] \
                and len(m.group(1)) >= len(opened[0]) and not m.group(2):
            blocks.append(_Block(opened[1], opened[2], pos, pos + len(line), opened[3], True))
            opened = None
        pos += len(line)
    if opened is not None:
        blocks.append(_Block(opened[1], opened[2], len(text), len(text), opened[3], False))
    return blocks


def _junk_message(text: str) -> str | None:
    if "\x00" in text:
        return "the response contains NUL bytes (binary data), not text"
    sample = text[:20000]
    bad = sum(1 for c in sample if (ord(c) < 32 and c not in "\n\r\t") or c == "\ufffd")
    if sample and bad / len(sample) > 0.01:
        return f"the response looks like binary data ({bad} control or undecodable characters in the first {len(sample)})"
    return None


def _bare_code(text: str) -> bool:
    """Whether an unfenced response is itself Python defining ModelNew (still a format error: the hint says why)."""
    if "class ModelNew" not in text:
        return False
    try:
        parse_source(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def detect_backend(code: str) -> str | None:
    """'cuda_raw' when the code uses kernel_gym.cuda_raw, 'cuda' when it builds CUDA (load_inline / __global__),
    'cute_dsl' when it imports CuTe DSL (`cutlass`) or decorates `@cute.kernel`/`@cute.jit`, 'tilelang' when it imports
    TileLang or decorates `@T.prim_func`/`@tilelang.jit`, 'helion' when it imports Helion (its kernels compile to
    Triton, so this comes before Triton), else 'triton' when it uses Triton."""
    if _RAW.search(code):
        return "cuda_raw"
    if _CUDA.search(code):
        return "cuda"
    if _CUTE_DSL.search(code):
        return "cute_dsl"
    if _TILELANG.search(code):
        return "tilelang"
    if _HELION.search(code):
        return "helion"
    if _TRITON.search(code):
        return "triton"
    return None


def parse_action(
    text: object,
    *,
    backend: str = "auto",
    max_response_chars: int = DEFAULT_MAX_RESPONSE_CHARS,
    max_code_chars: int = DEFAULT_MAX_CODE_CHARS,
) -> ParsedAction:
    """Split a response; never raises on bad agent input."""

    def fail(msg: str, reasoning: str = "", code: str | None = None, span=None) -> ParsedAction:
        return ParsedAction(reasoning, code, None, span, error=msg)

    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return fail(f"the action must be a string, got {type(text).__name__}")
    if not text.strip():
        return fail("the response is empty; answer with your reasoning and one ```python code block")
    if len(text) > max_response_chars:
        return fail(f"the response is {len(text):,} characters, over the limit of {max_response_chars:,}")
    junk = _junk_message(text)
    if junk:
        return fail(junk)
    blocks = _blocks(text)
    if not blocks:
        bare = " (the response is bare Python code: the code must be fenced)" if _bare_code(text) else ""
        return fail(f"no fenced code block found{bare}; put the whole solution in one ```python ... ``` block",
                    text.strip())
    block = blocks[-1]
    start, end = block.start, block.end
    code = text[start:end]
    reasoning = (text[: block.fence_start].rstrip() + "\n" + text[block.fence_end :].lstrip()).strip()
    if not block.closed:
        return fail("the last code block is not closed with ``` (was the response cut off?)", reasoning, code, (start, end))
    if not code.strip():
        return fail("the last code block is empty", reasoning, code, (start, end))
    if len(code) > max_code_chars:
        return fail(f"the code block is {len(code):,} characters, over the limit of {max_code_chars:,}", reasoning, code, (start, end))
    try:
        parse_source(code)
    except SyntaxError as e:
        where = f"line {e.lineno}" + (f", column {e.offset}" if e.offset else "")
        snippet = (e.text or "").rstrip()
        return fail(f"syntax error at {where}: {e.msg}" + (f"\n    {snippet}" if snippet else ""), reasoning, code, (start, end))
    except (ValueError, RecursionError, MemoryError) as e:
        return fail(f"the code cannot be parsed: {e}", reasoning, code, (start, end))
    if "class ModelNew" not in code:
        return fail("the code defines no `class ModelNew(nn.Module)`", reasoning, code, (start, end))
    found = detect_backend(code)
    if backend in _BACKENDS and found is not None and found != backend:
        return fail(f"this environment expects a {backend} solution, but the code is {found}", reasoning, code, (start, end))
    return ParsedAction(reasoning, code, found or (backend if backend in _BACKENDS else None), (start, end), block.language or None)
