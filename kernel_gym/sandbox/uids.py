"""Which uid each process the judge starts drops to, and the group of those that write shared caches.

- `target_uid(role)`: by default one of its own, `$KERNEL_GYM_RUNNER_UID_BASE` (200000) + its pid, so no two live
  processes share one (whichever judge started them) and none can signal or trace another; processes that write a
  shared cache (`reference`: `c_reference`) take theirs from a second range (+ 2^22, above any pid), so a candidate's
  uid never owns a file of those caches, and join the caches' group (gid = the base). `$KERNEL_GYM_RUNNER_UID=N` gives
  every process uid N (the old shared uid), `none` keeps the judge's uid (loudly: see `isolation.preflight`).
- `share_caches(role)`: as root, before the drop, the caches such a role writes become its group's.

The uid itself is dropped later, by `confine.apply` (called from `limits.confine`).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from kernel_gym.sandbox.confine.uid_drop import DEFAULT_UID_BASE as DEFAULT_BASE
from kernel_gym.sandbox.confine.uid_drop import UID_BASE_VARIABLE as BASE_VARIABLE
from kernel_gym.sandbox.confine.uid_drop import UID_VARIABLE

log = logging.getLogger(__name__)

# UID_VARIABLE: a number (one shared uid), "none" (keep), unset or "own": one per process (BASE_VARIABLE + its pid)
PID_SPAN = 1 << 22  # above the largest pid Linux allows (pid_max ≤ 2^22)
SHARED_UID = 65534  # where the per-process range is not mapped (a user namespace with few uids)


def base() -> int:
    try:
        return int(os.environ.get(BASE_VARIABLE, "") or DEFAULT_BASE)
    except ValueError:
        return DEFAULT_BASE


def cache_gid() -> int:
    """The group of the shared caches' writers (`writes_caches`)."""
    return base()


def writes_caches(role: str) -> bool:
    """Whether a role writes a cache another process of its role reads (limits.CACHE_DIRS: the reference's runner,
    `c_reference`): such roles take their uids from a range of their own and join the caches' group. Everything else
    (candidate, builder, check) is in the candidate range."""
    from kernel_gym.sandbox.limits import CACHE_DIRS

    return bool(CACHE_DIRS.get(role))


def _mapped(uid: int) -> bool:
    """Whether `uid` exists in this user namespace (a rootless or remapped container maps only a range)."""
    try:
        lines = Path("/proc/self/uid_map").read_text().split("\n")
    except OSError:
        return True
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and int(parts[0]) <= uid < int(parts[0]) + int(parts[2]):
            return True
    return False


def uid_setting() -> str:
    """"own" (a uid per process, the default), "none", or the number of one shared uid."""
    value = os.environ.get(UID_VARIABLE, "").strip().lower()
    if value in ("", "own", "auto"):
        return "own"
    if value == "none":
        return "none"
    return str(int(value))


def target_uid(role: str = "candidate", pid: int | None = None) -> int | None:
    """The uid this process (or `pid`) drops to as root: None with KERNEL_GYM_RUNNER_UID=none."""
    setting = uid_setting()
    if setting == "none":
        return None
    if setting != "own":
        return int(setting)
    uid = base() + (PID_SPAN if writes_caches(role) else 0) + (pid or os.getpid())
    if not _mapped(uid):
        log.warning("isolation: uid %d is not mapped in this user namespace (/proc/self/uid_map); falling back to "
                    "the shared uid %d: set %s to a range that is", uid, SHARED_UID, BASE_VARIABLE)
        return SHARED_UID if _mapped(SHARED_UID) else None
    return uid


def groups(role: str) -> list[int]:
    """Supplementary groups of a role's uid: the caches' group for the roles that write them."""
    return [cache_gid()] if writes_caches(role) and uid_setting() != "none" else []


def share_caches(role: str) -> None:
    """As root, before the drop: the build caches a role writes (limits.CACHE_DIRS) belong to the writers' group,
    group-writable, set-gid folders (files made there take the group); the role's umask is 002 after the drop."""
    from kernel_gym.paths import cache_dir
    from kernel_gym.sandbox.limits import CACHE_DIRS

    share_tree([cache_dir(name) for name in CACHE_DIRS.get(role, ())], cache_gid())


def share_tree(folders: Iterable[Path], gid: int) -> None:
    """Make each folder (created if missing) and everything in it group `gid`, group-writable, folders set-gid.
    Symlinks are left alone, and not followed."""
    for top in folders:
        try:
            top.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        for folder, dirs, files in os.walk(top):
            for path, is_dir in [(folder, True), *((os.path.join(folder, f), False) for f in files)]:
                try:
                    st = os.lstat(path)
                    if stat.S_ISLNK(st.st_mode):
                        continue
                    if st.st_gid != gid:
                        os.lchown(path, -1, gid)
                    mode = stat.S_IMODE(st.st_mode) | 0o060 | (0o2010 if is_dir else 0)
                    if mode != stat.S_IMODE(st.st_mode):
                        os.chmod(path, mode)
                except OSError:
                    pass
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
