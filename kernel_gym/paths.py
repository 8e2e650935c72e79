"""Where things live: packaged data (`kernel_gym/_data/<name>` in a wheel, `<checkout>/<name>` in a checkout), the
machine's cache (`$KERNEL_GYM_CACHE`, default `~/.cache/kernel_gym`), the sweep of folders whose process died, and
the address of a Unix socket whatever its folder's length."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
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


def sweep_dead(folders: Iterable[Path], owner: Callable[[Path], int]) -> int:
    """Remove each folder whose owning process (`owner(folder)`, its pid) no longer exists; a folder whose owner
    cannot be read (`owner` raises OSError or ValueError) is left alone. Returns how many were removed."""
    removed = 0
    for folder in folders:
        try:
            pid = owner(folder)
        except (OSError, ValueError):
            continue
        if not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


UNIX_PATH_MAX = 107  # bytes of a socket's path Linux takes (sun_path is 108, with its NUL)


@contextlib.contextmanager
def unix_address(path: Path) -> Iterator[str]:
    """An address to bind or connect a Unix socket at `path`: the path itself, or, when it is longer than Linux
    takes (a deep $KERNEL_GYM_JUDGE_DIR or temporary folder), the same file reached through an open descriptor of
    its folder (`/proc/self/fd/N/name`), valid while the context is open."""
    if len(os.fsencode(str(path))) <= UNIX_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)
