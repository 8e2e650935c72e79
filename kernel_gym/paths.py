"""Where things live: packaged data (`kernel_gym/_data/<name>` in a wheel, `<checkout>/<name>` in a checkout) and
the machine's cache (`$KERNEL_GYM_CACHE`, default `~/.cache/kernel_gym`)."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The `envs/` or `tasks/` folder shipped with this install."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    return _PACKAGE / "_data" / name


def cache_dir(*parts: str) -> Path:
    """`$KERNEL_GYM_CACHE/<parts>` (default `~/.cache/kernel_gym`), read at each call; not created."""
    return Path(os.environ.get("KERNEL_GYM_CACHE", Path.home() / ".cache" / "kernel_gym")).joinpath(*parts)
