"""`ast.parse` behind one lock for the whole process.

CPython 3.11 before 3.11.9 can fail an `ast.parse` with "SystemError: AST constructor recursion depth mismatch" when
two threads parse at once (the AST converter's recursion counter is shared, and a garbage collection inside one
parse may switch threads; python/cpython#106905). Rollouts step envs from threads, each parsing responses, rules and
signals: seen in CI as one failed rollout step. The lock costs nothing measurable (a parse takes ~0.1-1 ms).
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.Lock()


def parse_source(source: str, *args: Any, **kwargs: Any) -> Any:
    """`ast.parse(source, ...)`, one thread at a time."""
    with _LOCK:
        return ast.parse(source, *args, **kwargs)
