"""What a solution file handed to `kernel-gym eval` or `kernel-gym lint` stands for: the response the env judges.

The env's contract (CONTRACT.md): an action is the model's whole response and its code is the response's last fenced
code block; a response without one is a `format_error` with score 0, bare Python included (the prompt asks for a
fenced block, and a trainer learns from that error). A file is judged as one such response:

- a `.py` file (or `--solution-format code`) is code by definition: the whole file, however it is written, becomes
  the one fenced block of the response (`fence`), whose fence no line of the file can close, so a docstring that
  shows a ``` block stays part of the code;
- any other file (`.md`, `.txt`, `.json`, ...; or `--solution-format response`) is a model response taken as it is:
  its last fenced block is the code, and without one it is the env's `format_error`, exactly as `env.step` says.
"""

from __future__ import annotations

import re
from pathlib import Path

FORMATS = ("auto", "code", "response")
"""`--solution-format`: "auto" (by the file's suffix: `.py` is code, anything else a response), "code", "response"."""

_TICKS = re.compile(r"^ {0,3}(`{3,})", re.MULTILINE)


def fence(code: str, language: str = "python") -> str:
    """`code` as a response of one fenced block: a fence longer than any run of backticks that opens a line of the
    code, so no line of it closes the block early."""
    ticks = "`" * max([3, *(len(m.group(1)) + 1 for m in _TICKS.finditer(code))])
    return f"{ticks}{language}\n{code.rstrip()}\n{ticks}\n"


def is_code(name: str | Path, form: str = "auto") -> bool:
    """Whether a file is code (True) or a model response (False) under `form` (see FORMATS)."""
    if form not in FORMATS:
        raise ValueError(f"solution format must be one of {FORMATS}, got {form!r}")
    return form == "code" or (form == "auto" and Path(name).suffix.lower() == ".py")


def as_response(text: str, name: str | Path, form: str = "auto") -> str:
    """The response a solution file stands for: its text fenced when it is code, else the text itself."""
    return fence(text) if is_code(name, form) else text
