"""Where packaged data lives: `kernel_gym/_data/<name>` in a wheel, `<checkout>/<name>` in a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The `envs/` or `tasks/` folder shipped with this install."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    return _PACKAGE / "_data" / name
