"""A text space for code and prose: any characters, any length up to a maximum.

`gymnasium.spaces.Text` checks every character against a finite charset (alphanumeric by default), which
code, prose and task sources in any language cannot satisfy; this subclass samples printable ASCII but
accepts any string within its length bounds.
"""

from __future__ import annotations

import string
from typing import Any

from gymnasium import spaces

_SAMPLE_CHARSET = string.printable


class FreeText(spaces.Text):
    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | None = None):
        super().__init__(max_length=max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"FreeText({self.min_length}, {self.max_length})"
