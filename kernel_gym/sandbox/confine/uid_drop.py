"""The uid drop: the confinement's `uid:N` and `no_capabilities` pieces (see the table in
`kernel_gym.sandbox.confine`). A process started as root becomes uid/gid N with only the groups it is given and no
capabilities, after checking that N can still reach its workdir and the interpreter's folders."""

from __future__ import annotations

import ctypes
import os
import stat
import sys
from collections.abc import Collection, Sequence
from pathlib import Path

from .errors import ConfinementError
from .libc import libc

DEFAULT_UID = 65534  # KERNEL_GYM_RUNNER_UID=65534: the old shared uid
UID_VARIABLE = "KERNEL_GYM_RUNNER_UID"
UID_BASE_VARIABLE, DEFAULT_UID_BASE = "KERNEL_GYM_RUNNER_UID_BASE", 200000  # own uids: base + pid

PR_SET_PDEATHSIG, PR_GET_PDEATHSIG = 1, 2


def runner_uid(uid: int | str | None = "auto") -> int | None:
    """The uid `apply` drops to: `uid` itself, None to keep, or for "auto" $KERNEL_GYM_RUNNER_UID: a number (one uid
    shared by every runner), "none" to keep the current uid, unset or "own" a uid of this process's own,
    $KERNEL_GYM_RUNNER_UID_BASE (200000) + its pid (`kernel_gym.sandbox.uids`, which also gives the roles that
    write shared caches a range of their own)."""
    if uid == "auto":
        value = os.environ.get(UID_VARIABLE, "").strip().lower()
        if value == "none":
            return None
        if value in ("", "own", "auto"):
            return int(os.environ.get(UID_BASE_VARIABLE, "") or DEFAULT_UID_BASE) + os.getpid()
        return int(value)
    return None if uid is None else int(uid)


def _unreachable(path: Path, uid: int, gid: int | Collection[int], read: bool = False) -> Path | None:
    """The first folder on the way to `path` (itself included when `read`) that uid (with its group or groups) cannot
    search (or list)."""
    gids = {gid} if isinstance(gid, int) else set(gid)
    folders = list(reversed(path.parents)) + ([path] if read else [])
    for folder in folders:
        try:
            st = os.stat(folder)
        except OSError:
            return folder
        shift = 6 if st.st_uid == uid else 3 if st.st_gid in gids else 0
        need = (0o5 if read and folder == path else 0o1) << shift
        if st.st_mode & need != need:
            return folder
    return None


def _interpreter_folders() -> list[Path]:
    """Where the running Python loads modules from later (the stdlib's lazy imports, site-packages)."""
    folders = [Path(os.path.dirname(os.__file__))]
    folders += [Path(p) for p in sys.path if p and os.path.isdir(p)]
    return list(dict.fromkeys(f.resolve() for f in folders))


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.lchown(root, uid, gid)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.lchown(os.path.join(folder, name), uid, gid)


def _mode(path: Path) -> str:
    try:
        return stat.filemode(os.stat(path).st_mode)
    except OSError as exc:
        return exc.strerror or "unreadable"


def _capabilities() -> int | None:
    """CapEff of this thread (what it may do beyond its uid's rights); None where /proc cannot tell."""
    try:
        for line in Path("/proc/thread-self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        pass
    return None


def drop_uid(uid: int, workdir: Path, applied: list[str], reasons: dict[str, str],
              groups: Sequence[int] = ()) -> None:
    if os.geteuid() != 0:
        reasons["uid"] = f"not root (euid {os.geteuid()}): keeps its uid"
        return
    gid = uid
    gids = {gid, *groups}
    blocked = _unreachable(workdir, uid, gids)
    if blocked is not None:
        reasons["uid"] = (f"{blocked} cannot be searched by uid {uid} (mode {_mode(blocked)}): "
                          "the runner could not reach its workdir; keeps root")
        return
    for folder in _interpreter_folders():
        blocked = _unreachable(folder, uid, gids, read=True)
        if blocked is not None:
            reasons["uid"] = (f"{blocked} cannot be read by uid {uid} (mode {_mode(blocked)}),"
                              f" so Python could not import from {folder} after the drop; keeps root (a mount "
                              "namespace makes it reachable: kernel_gym.sandbox.mount_ns.prepare, which needs "
                              "CAP_SYS_ADMIN)")
            return
    # the kernel clears the parent-death signal when the credentials change (commit_creds): armed again below, or
    # a runner would outlive its judge or fork server
    death_signal, parent = ctypes.c_int(0), os.getppid()
    libc().prctl(PR_GET_PDEATHSIG, ctypes.byref(death_signal), 0, 0, 0)
    try:
        _chown_tree(workdir, uid, gid)
        os.setgroups(list(groups))
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as exc:
        reasons["uid"] = f"dropping to uid {uid}: {exc}"
        if os.geteuid() == 0:
            return
        raise ConfinementError(f"half-dropped credentials: {exc}") from exc
    finally:
        if death_signal.value:
            libc().prctl(PR_SET_PDEATHSIG, death_signal.value, 0, 0, 0)
            if os.getppid() != parent:  # the parent ended in between: what the signal would have done
                os.kill(os.getpid(), death_signal.value)
    applied.append(f"uid:{uid}")
    caps = _capabilities()  # a setresuid from root to another uid clears them (no SECBIT_KEEP_CAPS): checked
    if caps == 0:
        applied.append("no_capabilities")
    else:
        reasons["no_capabilities"] = f"CapEff {caps:#x} after the uid drop" if caps else "CapEff unreadable"
