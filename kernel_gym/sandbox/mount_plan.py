"""What a process that drops to an unprivileged uid must still reach, and how a mount namespace makes it so: the
folders to cover with a tmpfs (each one that blocks the way, and the judge's home), the needed subtrees to bind back
under them, the symlinks to recreate there. Planning only: `mount_ns.prepare` does it."""

from __future__ import annotations

import errno
import os
import pwd
import stat
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from pathlib import Path

# Folders never covered by a tmpfs, even where they block the way (the system would break).
_NEVER_SHADOW = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/run",
                           "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/home", "/mnt", "/media"})


def _can_search(st: os.stat_result, uid: int, gids: Iterable[int], bits: int) -> bool:
    shift = 6 if st.st_uid == uid else 3 if st.st_gid in set(gids) else 0
    need = bits << shift
    return st.st_mode & need == need


def blocking_folder(path: Path, uid: int, gids: Iterable[int]) -> Path | None:
    """The first folder above `path` that uid (with groups `gids`) cannot search; None when the way is open."""
    gids = list(gids)
    for folder in reversed(path.parents):
        try:
            st = os.stat(folder)
        except OSError:
            return None
        if not _can_search(st, uid, gids, 0o1):
            return folder
    return None


def _walk(path: str, links: list[tuple[str, str]], depth: int = 0) -> str:
    """`path` resolved like realpath, recording every symlink met on the way as (link, its target)."""
    if depth > 40:
        raise OSError(errno.ELOOP, "too many symlinks", path)
    current = "/"
    for part in Path(os.path.normpath(path)).parts[1:]:
        candidate = os.path.join(current, part)
        if part == "..":
            current = os.path.dirname(current)
        elif os.path.islink(candidate):
            target = os.readlink(candidate)
            links.append((candidate, target))
            current = _walk(os.path.join(current, target), links, depth + 1)
        else:
            current = candidate
    return current


def needed_paths(extra: Sequence[tuple[str, bool]] = ()) -> list[tuple[str, bool]]:
    """(path, writable) of what a runner, build process or compile check reads or writes after the uid drop: the
    interpreter (prefixes, sys.path, sysconfig's folders: stdlib, site-packages, Python.h), the folders of PATH,
    LD_LIBRARY_PATH, PYTHONPATH and CUDA_HOME, the build cache ($KERNEL_GYM_CACHE), its own folders (HOME, TMPDIR,
    the Triton cache, the working directory) and $KERNEL_GYM_RUNNER_WRITABLE."""
    read: list[str] = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                       os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable)),
                       os.path.dirname(os.__file__), *[p for p in sys.path if p]]
    for scheme_path in sysconfig.get_paths().values():
        read.append(scheme_path)
    for variable in ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH"):
        read += [p for p in os.environ.get(variable, "").split(os.pathsep) if p]
    if os.environ.get("CUDA_HOME"):
        read.append(os.environ["CUDA_HOME"])
    write = [cache_folder(), *[os.environ[v] for v in ("HOME", "TMPDIR", "TRITON_CACHE_DIR") if os.environ.get(v)]]
    write += [p for p in os.environ.get("KERNEL_GYM_RUNNER_WRITABLE", "").split(os.pathsep) if p]
    try:
        write.append(os.getcwd())
    except OSError:
        pass
    out: dict[str, bool] = {}
    for path, writable in [*((p, False) for p in read), *((p, True) for p in write), *extra]:
        if os.path.isabs(path):
            path = os.path.normpath(path)
            out[path] = out.get(path, False) or writable
    return list(out.items())


def cache_folder() -> str:
    """$KERNEL_GYM_CACHE as kernel_gym.paths.cache_dir reads it (~ is the process's HOME: the judge's, here)."""
    return os.environ.get("KERNEL_GYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kernel_gym")


def _home() -> str | None:
    """The home of the process's own user (root's /root): covered with the rest, so its secrets are out of view."""
    try:
        home = os.path.normpath(pwd.getpwuid(os.geteuid()).pw_dir)
    except (KeyError, OSError):
        return None
    return home if home not in _NEVER_SHADOW and os.path.isdir(home) else None


def plan(uid: int, gids: Sequence[int], needs: Sequence[tuple[str, bool]]) -> tuple[list[str], list[tuple[str, bool]],
                                                                                     list[tuple[str, str]], list[str]]:
    """(shadows, binds, links, problems): the folders to cover with a tmpfs, the (real path, writable) to bind back
    under them, the symlinks to recreate there, and what cannot be made reachable (a system folder that blocks)."""
    links: list[tuple[str, str]] = []
    real: dict[str, bool] = {}
    for path, writable in needs:
        try:
            resolved = _walk(path, links)
        except OSError:
            continue
        if os.path.exists(resolved):
            real[resolved] = real.get(resolved, False) or writable
    problems: list[str] = []
    shadows: set[str] = set()
    for path in real:
        blocked = blocking_folder(Path(path), uid, gids)
        if blocked is None:
            continue
        if str(blocked) in _NEVER_SHADOW:
            problems.append(f"{blocked} (mode {stat.filemode(os.stat(blocked).st_mode)}) blocks {path}")
            continue
        shadows.add(str(blocked))
    home = _home()
    if home is not None:
        shadows.add(home)
    # a covered folder inside another is the other's; a need at or above a covered folder is not bound (the cover
    # wins: e.g. a working directory of /root stays hidden)
    shadows = {s for s in shadows if not any(s.startswith(o + "/") for o in shadows)}
    binds = [(p, w) for p, w in sorted(real.items()) if any(p.startswith(s + "/") for s in shadows)]
    # one bind serves what lies beneath it, unless that needs writing and it is read-only
    kept: list[tuple[str, bool]] = []
    for path, writable in binds:
        if any(path.startswith(k + "/") and (kw or not writable) for k, kw in kept):
            continue
        kept.append((path, writable))
    links = [(link, target) for link, target in dict.fromkeys(links) if any(link.startswith(s + "/") for s in shadows)]
    return sorted(shadows), kept, links, problems
