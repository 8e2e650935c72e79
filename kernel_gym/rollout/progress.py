"""A progress bar on stderr: tqdm when it is installed, else a line every few percent; or nothing."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _Lines:
    """The fallback: "rollout: 40/128 steps (31%)" on stderr every 10% and at the end."""

    def __init__(self, total: int, desc: str):
        self.total, self.desc, self.n, self._shown, self._t0 = total, desc, 0, -1, time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        tenth = (10 * self.n) // max(1, self.total)
        if tenth != self._shown or self.n == self.total:
            self._shown = tenth
            print(f"{self.desc}: {self.n}/{self.total} steps ({100 * self.n // max(1, self.total)}%, "
                  f"{time.monotonic() - self._t0:.0f} s)", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


@contextmanager
def progress_bar(total: int, enabled: bool = True, desc: str = "rollout") -> Iterator[Any]:
    """An object with update(n); tqdm's bar when tqdm is importable."""
    if not enabled or total <= 0:
        bar: Any = _Silent()
    else:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=total, desc=desc, unit="step", file=sys.stderr, dynamic_ncols=True)
        except ImportError:
            bar = _Lines(total, desc)
    try:
        yield bar
    finally:
        bar.close()
