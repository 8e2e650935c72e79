"""A mount namespace of its own for a process about to drop to an unprivileged uid (the `mount_ns` piece).

`prepare(role)` runs at the very start of the process, while it is root and before any thread that will run Python
exists (before torch is imported): when the target uid could not reach what the process needs (Python under /root,
as pyenv and most GPU images put it; the build caches under ~/.cache), a mount namespace of its own
(`unshare(CLONE_NEWNS)`, mounts made private), a read-only tmpfs (mode 0755) over each folder that blocks the way and
over the judge's home, and the needed subtrees bound back (opened as O_PATH before the tmpfs hides them, bound through
/proc/self/fd/N; the interpreter's read-only). Everything else in /root (keys, tokens, shell history) is gone from the
process's view. Needs CAP_SYS_ADMIN: root on a VM or bare metal; in Docker `--cap-add SYS_ADMIN` (its default seccomp
profile also refuses unshare without it) or `--privileged`. Without it, put Python where uid N can read it (/opt,
/usr/local), or accept root runners with `KERNEL_GYM_RUNNER_UID=none`. What to cover and bind: `mount_plan`.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernel_gym.sandbox.confine.libc import thread_count
from kernel_gym.sandbox.limits import gib_setting
from kernel_gym.sandbox.mount_plan import cache_folder, needed_paths, plan
from kernel_gym.sandbox.uids import UID_VARIABLE, groups, share_caches, target_uid, writes_caches

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2

_STATE: dict[str, Any] = {"done": False, "pieces": [], "reasons": {}, "shadows": [], "binds": []}


def prepared() -> dict[str, Any]:
    """What `prepare` did in this process: pieces (["mount_ns"] or []), reasons, shadows (tmpfs'd folders), binds."""
    return _STATE


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
        share_caches(role)
    try:  # bound as it is now: a cache made later behind the tmpfs would not be seen
        Path(cache_folder()).mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    shadows, binds, links, problems = plan(uid, gids, needed_paths(extra))
    if problems:
        reasons["reach"] = "; ".join(problems)
    if not shadows:
        reasons["mount_ns"] = "not needed: uid can reach everything it needs"
        return []
    if thread_count() != 1:  # e.g. OpenBLAS's pool, started by numpy's import under OMP_NUM_THREADS > 1
        reasons["mount_ns_threads"] = (
            f"{thread_count() - 1} native thread(s) started before prepare() keep the judge's view of the files (a "
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


JOB_SPACE_INODES = 200_000  # files and folders a runner's jobs may have at once (Triton's cache makes a few per kernel)


def job_space_bytes() -> int:
    """How much a runner's jobs may write at once: $KERNEL_GYM_RUNNER_DISK_GB, else 2 GiB."""
    return gib_setting("KERNEL_GYM_RUNNER_DISK_GB", 2.0)


def job_space(work: Path, device: str = "cpu") -> list[str]:
    """The folder a runner's jobs write in (their files, caches, HOME and TMPDIR: runner/session.py), made a tmpfs of
    bounded size (`job_space_bytes`) in a mount namespace of the runner's own: a job that writes more gets "No space
    left on device", and no job fills the machine's disk. Its pages count as the runner's memory and are gone when
    the runner ends. As root, at the runner's start (single-threaded); elsewhere, or where the mount is refused (a
    container without CAP_SYS_ADMIN), the folder is a plain one and `prepared()["reasons"]["disk_quota"]` says why.
    Returns ["disk_quota"] when in force."""
    work.mkdir(parents=True, exist_ok=True)
    reasons: dict[str, str] = _STATE["reasons"]
    if os.geteuid() != 0:
        reasons["disk_quota"] = "not root: the jobs' folder is a plain one"
        return []
    libc = _libc()
    try:
        # a namespace of its own, always (a runner forked from the fork server shares the server's otherwise, and
        # its mount would outlive it there)
        if libc.unshare(CLONE_NEWNS) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"unshare(CLONE_NEWNS): {os.strerror(code)}")
        _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
        _mount(libc, "tmpfs", str(work), "tmpfs", MS_NOSUID | MS_NODEV,
               f"size={job_space_bytes()},nr_inodes={JOB_SPACE_INODES},mode=0700")
    except OSError as e:
        reasons["disk_quota"] = f"{e} (the jobs' folder is a plain one)"
        return []
    return ["disk_quota", *_private_shm(libc, device)]


SHM = "/dev/shm"


def _shm_opted_out(device: str) -> str:
    """Why a runner keeps the machine's /dev/shm ("" when it gets its own): $KERNEL_GYM_RUNNER_SHM_GB is 0, or unset
    on cuda (see `shm_bytes`)."""
    raw = os.environ.get("KERNEL_GYM_RUNNER_SHM_GB", "").strip()
    if device == "cuda" and not raw:
        return "cuda: the machine's /dev/shm, shared (CUDA IPC; KERNEL_GYM_RUNNER_SHM_GB opts in)"
    try:
        if float(raw or 1) == 0:
            return "KERNEL_GYM_RUNNER_SHM_GB=0: the machine's /dev/shm, shared"
    except ValueError:
        pass
    return ""


def shm_bytes(device: str = "cpu") -> int:
    """The size of a runner's own /dev/shm: $KERNEL_GYM_RUNNER_SHM_GB, else 64 MiB on cpu; 0 keeps the machine's
    (shared). On cuda only where the variable is set: under a private /dev/shm the H100's reference runner could not
    attach the judge's CUDA IPC buffers (2026-12-07f; the CUDA driver's interprocess events are the suspect), so
    cuda runners keep the machine's until that is measured (tests/gpu/test_confine_gpu.py)."""
    return 0 if _shm_opted_out(device) else gib_setting("KERNEL_GYM_RUNNER_SHM_GB", 1 / 16)


def _private_shm(libc: ctypes.CDLL, device: str) -> list[str]:
    """In the runner's own mount namespace (`job_space`'s): a fresh tmpfs of `shm_bytes` over /dev/shm. The
    machine's is shared by every process: what other processes keep there (the judge's torch IPC counters, another
    job's files) is out of a cpu runner's sight with this. On cuda, where Landlock lets a runner write /dev/shm
    (sandbox/limits.py), it would also bound what a job writes there and drop it with the runner; but a cuda runner
    needs the machine's /dev/shm for CUDA IPC as far as measured (`shm_bytes`), so there it is opt-in. Returns
    ["private_shm"] when in force; `prepared()["reasons"]["private_shm"]` says why not."""
    reasons: dict[str, str] = _STATE["reasons"]
    why = _shm_opted_out(device)
    if why:
        reasons["private_shm"] = why
        return []
    if not os.path.isdir(SHM):
        reasons["private_shm"] = f"no {SHM} on this machine"
        return []
    try:
        _mount(libc, "tmpfs", SHM, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
               f"size={shm_bytes(device)},nr_inodes=4096,mode=1777")
    except OSError as e:
        reasons["private_shm"] = f"{e} (the machine's {SHM}, shared)"
        return []
    return ["private_shm"]
