"""Least privilege for every process the judge starts: each runner (candidate, reference), build process and compile
check runs as an unprivileged uid of its own, with no capabilities, and the judge records what is in force.

Process side (no import beyond the stdlib and `limits`; the uid itself is dropped later by `confine.apply`, called
from `limits.confine`):
- `target_uid(role)`: the uid a process drops to. By default one of its own, `$KERNEL_GYM_RUNNER_UID_BASE` (200000)
  + its pid, so no two live processes share one (whichever judge started them) and none can signal or trace
  another; processes that write a shared cache (`reference`: `c_reference`) take theirs from a second range
  (+ 2^22, above any pid), so a candidate's uid never owns a file of those caches, and join the caches' group
  (gid = the base). `$KERNEL_GYM_RUNNER_UID=N` gives every process uid N (the old shared uid), `none` keeps the
  judge's uid (loudly: see `preflight`).
- `prepare(role)`: at the very start of the process, while it is root and before any thread that will run Python
  exists (before torch is imported): when the target uid could not reach what the process needs (Python under /root, as pyenv and most GPU
  images put it; the build caches under ~/.cache), a mount namespace of its own (`unshare(CLONE_NEWNS)`, mounts made
  private), a read-only tmpfs (mode 0755) over each folder that blocks the way and over the judge's home, and the
  needed subtrees bound back (opened as O_PATH before the tmpfs hides them, bound through /proc/self/fd/N; the
  interpreter's read-only). Everything else in /root (keys, tokens, shell history) is gone from the process's view.
  Needs CAP_SYS_ADMIN: root on a VM or bare metal; in Docker `--cap-add SYS_ADMIN` (its default seccomp profile also
  refuses unshare without it) or `--privileged`. Without it, put Python where uid N can read it (/opt, /usr/local),
  or accept root runners with `KERNEL_GYM_RUNNER_UID=none`.

Judge side: `preflight()` starts one probe process that does what a runner does (prepare, drop) and logs a WARNING
when runners would keep root or capabilities; `observe(pid)` reads what is in force for a runner from /proc (its
uid, CapEff, NoNewPrivs, seccomp, namespaces, session: facts the runner cannot forge); `record` keeps the last seen
per role for `judge status` (`summary()`); `seal(tree)` makes a published build root's and read-only.
"""

from __future__ import annotations

import ctypes
import errno
import json
import logging
import os
import pwd
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

UID_VARIABLE = "KERNEL_GYM_RUNNER_UID"  # a number (one shared uid), "none" (keep), unset or "own": one per process
BASE_VARIABLE = "KERNEL_GYM_RUNNER_UID_BASE"
DEFAULT_BASE = 200000
PID_SPAN = 1 << 22  # above the largest pid Linux allows (pid_max ≤ 2^22)
SHARED_UID = 65534  # where the per-process range is not mapped (a user namespace with few uids)


CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
# Folders never covered by a tmpfs, even where they block the way (the system would break).
_NEVER_SHADOW = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/run",
                           "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/home", "/mnt", "/media"})


# ------------------------------------------------------------------------------------------------------- the uid

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


# -------------------------------------------------------------------------------------------- reach (mount ns)

_STATE: dict[str, Any] = {"done": False, "pieces": [], "reasons": {}, "shadows": [], "binds": []}


def prepared() -> dict[str, Any]:
    """What `prepare` did in this process: pieces (["mount_ns"] or []), reasons, shadows (tmpfs'd folders), binds."""
    return _STATE


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
    write = [_cache(), *[os.environ[v] for v in ("HOME", "TMPDIR", "TRITON_CACHE_DIR") if os.environ.get(v)]]
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


def _cache() -> str:
    """$KERNEL_GYM_CACHE as kernel_gym.paths.cache_dir reads it (~ is the process's HOME: the judge's, here)."""
    return os.environ.get("KERNEL_GYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kernel_gym")


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def enc(value: str | None) -> bytes | None:
        return None if value is None else os.fsencode(value)

    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount({source}, {target}, {fstype}, {flags:#x}): {os.strerror(code)}")


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


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


def prepare(role: str = "candidate", extra: Sequence[tuple[str, bool]] = ()) -> list[str]:
    """At the start of a process that will drop to `target_uid(role)`: make what it needs reachable by that uid (a
    mount namespace, see the module's doc) and hide the judge's home. Idempotent; returns the pieces it put in force
    the first time (["mount_ns"] or []), [] after. Meant to run while the process is single-threaded, before any
    thread that will run Python exists (a namespace is per thread: threads started earlier keep the old view)."""
    if _STATE["done"]:
        return []
    _STATE["done"] = True
    reasons: dict[str, str] = _STATE["reasons"]
    uid = target_uid(role) if os.geteuid() == 0 else None
    if uid is None:
        reasons["mount_ns"] = ("not root: the process keeps its uid" if os.geteuid() != 0
                               else f"{UID_VARIABLE}=none: the process keeps root")
        return []
    gids = [uid, *groups(role)]
    if writes_caches(role):
        _share_caches(role)
    try:  # bound as it is now: a cache made later behind the tmpfs would not be seen
        Path(_cache()).mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    shadows, binds, links, problems = plan(uid, gids, needed_paths(extra))
    if problems:
        reasons["reach"] = "; ".join(problems)
    if not shadows:
        reasons["mount_ns"] = "not needed: uid can reach everything it needs"
        return []
    if _threads() != 1:  # e.g. OpenBLAS's pool, started by numpy's import under OMP_NUM_THREADS > 1
        reasons["mount_ns_threads"] = (
            f"{_threads() - 1} native thread(s) started before prepare() keep the judge's view of the files (a "
            "namespace is per thread; threads started later take this one's): they run no Python, and the uid drop "
            "covers them")
    try:
        _enter(shadows, binds, links)
    except OSError as e:
        hint = (" (a container needs CAP_SYS_ADMIN: docker --cap-add SYS_ADMIN, whose default seccomp profile also "
                "refuses unshare without it; or put Python where the runner uid can read it, e.g. /opt)"
                if e.errno in (errno.EPERM, errno.EACCES) else "")
        reasons["mount_ns"] = f"{e}{hint}"
        return []
    _STATE.update(shadows=shadows, binds=[p for p, _ in binds])
    _STATE["pieces"] = ["mount_ns"]
    return ["mount_ns"]


def _enter(shadows: list[str], binds: list[tuple[str, bool]], links: list[tuple[str, str]]) -> None:
    libc = _libc()
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    if libc.unshare(CLONE_NEWNS) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"unshare(CLONE_NEWNS): {os.strerror(code)}")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the judge's namespace
    # opened in the new namespace (a bind's source must be a mount of the caller's), before the tmpfs hides them
    fds = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path, _ in binds}
    covered: list[str] = []
    try:
        for shadow in shadows:
            _mount(libc, "tmpfs", shadow, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755,size=1m,nr_inodes=4096")
            covered.append(shadow)
            for path, writable in binds:
                if not path.startswith(shadow + "/"):
                    continue
                if not os.path.lexists(path):  # (beneath an earlier bind it exists already)
                    _mkdirs(os.path.dirname(path))
                    if stat.S_ISDIR(os.fstat(fds[path]).st_mode):
                        _mkdirs(path)
                    else:
                        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
                _mount(libc, f"/proc/self/fd/{fds[path]}", path, None, MS_BIND | MS_REC)
                if not writable:
                    _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
            for link, target in links:
                if link.startswith(shadow + "/") and not os.path.lexists(link):
                    try:
                        _mkdirs(os.path.dirname(link))
                        os.symlink(target, link)
                    except OSError:
                        pass  # (beneath a read-only bind: the link is there already, or was not needed)
            _mount(libc, None, shadow, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        for shadow in reversed(covered):  # back to the whole view: the uid drop then decides (and says why not)
            libc.umount2(os.fsencode(shadow), MNT_DETACH)
        raise
    finally:
        for fd in fds.values():
            os.close(fd)
    if cwd is not None and any(cwd == s or cwd.startswith(s + "/") for s in shadows):
        try:
            os.chdir(cwd)  # the working directory as the new view shows it (bound back, or gone)
        except OSError:
            pass


def _mkdirs(path: str) -> None:
    """mkdir -p with mode 0755 whatever the umask (on the fresh tmpfs)."""
    if os.path.lexists(path):
        return
    _mkdirs(os.path.dirname(path))
    os.mkdir(path)
    os.chmod(path, 0o755)


def _share_caches(role: str) -> None:
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


# ------------------------------------------------------------------------------------------------- judge side

def observe(pid: int | str) -> dict[str, Any]:
    """What is in force for process `pid`, read by the judge from /proc (nothing the process could forge): its uid
    and gid, capabilities (CapEff as an int), no_new_privs, seccomp, whether it has a mount, network and pid namespace
    other than the judge's, and whether it leads its own session. {} when the process is gone. ("self": the
    caller, which may no longer read /proc/<its pid> by number under Landlock.)"""
    own = os.getpid() if pid == "self" else int(pid)
    try:
        status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                      if ":" in line)
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return {}

    def other(ns: str) -> bool | None:
        try:
            return os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}")
        except OSError:
            return None

    return {"uid": int(status["Uid"].split()[1]), "gid": int(status["Gid"].split()[1]),
            "groups": [int(g) for g in status.get("Groups", "").split()],
            "capabilities": int(status.get("CapEff", "0").strip() or "0", 16),
            "no_new_privs": status.get("NoNewPrivs", "0").strip() == "1",
            "seccomp": status.get("Seccomp", "0").strip() == "2",
            "mount_ns": other("mnt"), "network_ns": other("net"),
            "pid_ns": len(status.get("NSpid", "").split()) > 1,
            "own_session": int(fields[3]) == own, "own_process_group": int(fields[2]) == own}


_SEEN: dict[str, dict[str, Any]] = {}
_WARNED: set[str] = set()
_LOCK = threading.Lock()


def record(role: str, pid: int, pieces: Sequence[str] = ()) -> dict[str, Any]:
    """Observe a runner right after its confinement (its first job's `begin`), keep it as the last seen for its
    role, and warn once per process when it kept root or a capability. Returns the observation (with `pieces`)."""
    seen = observe(pid)
    if not seen:
        return {}
    seen["pieces"] = [str(p) for p in pieces]
    with _LOCK:
        _SEEN[role] = seen
        problem = weak(seen)
        if problem and role not in _WARNED:
            _WARNED.add(role)
            log.warning("ISOLATION: a %s runner (pid %d) %s; see docs/sandbox.md (least privilege)", role, pid, problem)
    return seen


def self_report(pieces: Sequence[str]) -> dict[str, Any]:
    """What a process that confined itself reports about itself (a build process, which the judge cannot observe
    once it has ended): `observe` of itself, its namespaces taken from what it put in force."""
    seen = observe("self") or {  # (a build process's own /proc may be out of its reach: `landlock_read`)
        "uid": os.geteuid(), "gid": os.getegid(), "groups": os.getgroups(),
        "capabilities": 0 if "no_capabilities" in pieces else None, "no_new_privs": "no_new_privs" in pieces,
        "seccomp": "seccomp" in pieces, "pid_ns": None, "own_session": os.getsid(0) == os.getpid(),
        "own_process_group": os.getpgrp() == os.getpid()}
    seen.update(mount_ns="mount_ns" in pieces, network_ns="no_network" in pieces, pieces=[str(p) for p in pieces])
    return seen


def note(role: str, seen: Any) -> None:
    """Keep a process's self-report (`self_report`) as the last seen for its role; warn once as `record` does."""
    if not isinstance(seen, dict) or not isinstance(seen.get("uid"), int):
        return
    seen = {k: v for k, v in seen.items() if isinstance(k, str) and isinstance(v, (bool, int, str, list, type(None)))}
    with _LOCK:
        _SEEN[role] = seen
        problem = weak(seen)
        if problem and role not in _WARNED:
            _WARNED.add(role)
            log.warning("ISOLATION: a %s process %s; see docs/sandbox.md (least privilege)", role, problem)


def weak(seen: dict[str, Any]) -> str | None:
    """What falls short of least privilege in an observation: root, or any capability; None when it does not."""
    if not seen:
        return None
    if seen.get("uid") == 0:
        return "runs as root (uid 0)" + (f" with capabilities {seen['capabilities']:#x}" if seen.get("capabilities")
                                          else "")
    if seen.get("capabilities"):
        return f"holds capabilities {seen['capabilities']:#x}"
    if seen.get("uid") == os.geteuid():
        return f"shares the judge's uid {seen['uid']}"
    return None


def for_job(candidate: Any, reference: Any) -> dict[str, Any]:
    """`info["isolation"]` of one job: what was in force for its candidate's runner (observed by the judge), the
    reference runner's uid, and the pieces the runner reported at its confinement."""
    seen = dict(getattr(candidate, "isolation", None) or {})
    if not seen:
        return {}
    ref = getattr(reference, "isolation", None) or {}
    return {"uid": seen.get("uid"), "reference_uid": ref.get("uid"), "capabilities": seen.get("capabilities"),
            "no_new_privs": seen.get("no_new_privs"), "seccomp": seen.get("seccomp"),
            "mount_ns": seen.get("mount_ns"), "network_ns": seen.get("network_ns"), "pid_ns": seen.get("pid_ns"),
            "own_session": seen.get("own_session"), "pieces": list(seen.get("pieces") or []),
            "weak": weak(seen)}


_PREFLIGHT: dict[str, Any] | None = None

PROBE = """
import json, os, sys, tempfile
sys.path.insert(0, sys.argv[1])
from kernel_gym.sandbox import confine, isolation
pieces = isolation.prepare("candidate")
reasons = dict(isolation.prepared()["reasons"])
uid = isolation.target_uid("candidate")
if uid is not None:
    pieces += confine.apply(sys.argv[2], uid=uid, landlock=False, seccomp=False, reasons=reasons)
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
print(json.dumps({"pieces": pieces, "reasons": reasons, "uid": os.getuid(), "shadows": isolation.prepared()["shadows"],
                  "capabilities": int(status["CapEff"].strip(), 16), "no_new_privs": status["NoNewPrivs"].strip() == "1"}))
"""


def preflight(refresh: bool = False) -> dict[str, Any]:
    """Once per judge process: what runners will get, from a probe process that does what a runner does at its
    start and confinement (prepare, drop the uid); logs a WARNING when they would keep root or a capability, or
    share the judge's uid. Returns {"setting", "uid", "capabilities", "mount_ns", "shadows", "pieces", "reasons",
    "weak"}."""
    global _PREFLIGHT
    with _LOCK:
        if _PREFLIGHT is not None and not refresh:
            return _PREFLIGHT
    from kernel_gym.sandbox import limits

    package = str(Path(__file__).resolve().parents[2])
    work = Path(tempfile.mkdtemp(prefix="kernel_gym_worker_probe_"))
    result: dict[str, Any]
    try:
        work.chmod(0o711)
        env = limits.worker_environment(work, "cpu", None, package)
        run = subprocess.run([sys.executable, "-c", PROBE, package, str(work)], capture_output=True, text=True,
                             env=env, cwd=work, timeout=120)
        result = json.loads(run.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired) as e:
        result = {"uid": None, "pieces": [], "reasons": {"probe": f"the isolation probe failed: {e}"}}
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    result["setting"] = uid_setting()
    result["mount_ns"] = "mount_ns" in result.get("pieces", [])
    result["weak"] = (weak({"uid": result.get("uid"), "capabilities": result.get("capabilities", 0)})
                      if result.get("uid") is not None else "the probe failed")
    if result["weak"]:
        why = "; ".join(f"{k}: {v}" for k, v in result.get("reasons", {}).items()
                        if k in ("uid", "mount_ns", "reach", "probe"))
        log.warning("ISOLATION: runners %s (euid %d, %s=%s)%s. Least privilege needs the judge to run as root with "
                    "CAP_SYS_ADMIN where Python lives under a folder the runner uid cannot enter (docker: --cap-add "
                    "SYS_ADMIN), or Python where that uid can read it (/opt, /usr/local); see docs/sandbox.md",
                    result["weak"], os.geteuid(), UID_VARIABLE, os.environ.get(UID_VARIABLE, "unset"),
                    f": {why}" if why else "")
    with _LOCK:
        _PREFLIGHT = result
    return result


def summary() -> dict[str, Any]:
    """`judge status`'s "isolation": the preflight's verdict and the last runner seen per role."""
    with _LOCK:
        return {"preflight": _PREFLIGHT, "runners": {role: dict(seen) for role, seen in _SEEN.items()},
                "weak": sorted({w for w in [(_PREFLIGHT or {}).get("weak"), *(weak(s) for s in _SEEN.values())] if w})}


def seal(tree: Path) -> None:
    """A build the judge publishes: owned by root, readable by everyone, writable by no one else (the uid that
    built it may later belong to another process)."""
    if os.geteuid() != 0:
        return
    for folder, _, files in os.walk(tree):
        for path in [folder, *(os.path.join(folder, f) for f in files)]:
            try:
                st = os.lstat(path)
                os.lchown(path, 0, 0)
                if not stat.S_ISLNK(st.st_mode):
                    os.chmod(path, (stat.S_IMODE(st.st_mode) | 0o444 | (0o111 if stat.S_ISDIR(st.st_mode) else 0))
                             & ~0o7022)
            except OSError:
                pass
