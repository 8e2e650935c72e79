"""Confinement of a runner process: what candidate code may still do once it runs. ctypes only.

A runner calls `apply(workdir)` on itself after its own imports (torch, triton) and before any candidate code. Each
piece fails soft with a logged reason (old kernel, not root, other architecture); `required=` turns a missing piece
into `ConfinementError`. The return value names the pieces that took effect.

| piece | limit | how | where it holds |
|---|---|---|---|
| `no_new_privs` | no privilege gain through exec (setuid binaries, file capabilities) | `prctl(PR_SET_NO_NEW_PRIVS)` | Linux ≥ 3.5 |
| `landlock_fs` | writes (create, write, truncate, delete, rename, link, mknod, device ioctl) only beneath `workdir`, `writable` and a few device files (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/nvidia*`); reads and exec everywhere | Landlock: every write-type right the running ABI knows is handled, then granted only there | Linux ≥ 5.13 with Landlock in the LSM list (ABI 1; truncate ABI 3 = 6.2, device ioctl ABI 5 = 6.10) |
| (with `landlock_fs`) | no ptrace, `/proc/<pid>/mem`, `/proc/<pid>/fd`, `process_vm_*` of any process outside the domain | Landlock's ptrace rule (part of every domain) | as `landlock_fs` |
| `landlock_net` | no TCP bind or connect | Landlock `handled_access_net` with no port allowed | ABI 4 (Linux ≥ 6.7) |
| `landlock_proc` | no reading of another process's `/proc/<pid>` files (`environ`, `cmdline`, `maps`, ...): every file outside `/proc` stays readable, and in `/proc` the system's files (`cpuinfo`, `meminfo`, `sys/`, `driver/`, ...) and the process's own folder | a second Landlock layer that handles file reads and grants them beneath every top-level entry but `/proc`, every `/proc` entry that is not a pid, and `/proc/<own pid>`; listing folders stays allowed everywhere | as `landlock_fs`; opt-in (`proc=True`): the process's children read their own `/proc/self` files only where they are its threads |
| `landlock_read` | reads (files, folder listings) and execution only beneath `workdir`, `writable`, the `devices` and `readable` (a compile check's or build process's toolchain, Python install and own folder): no `/proc`, no home, no other job | a further Landlock layer that handles read, list and execute rights and grants them only there | as `landlock_fs`; opt-in (`readable=[...]`) |
| `landlock_scope` | no signal to, no abstract-unix-socket connect to, any process outside the domain (the judge, other runners) | Landlock `scoped` | ABI 6 (Linux ≥ 6.12) |
| `landlock_all_threads` | the Landlock domain covers every thread, not only the caller | single-threaded at the call, or `LANDLOCK_RESTRICT_SELF_TSYNC` | ABI 8 for TSYNC; else only if no other thread exists |
| `seccomp` | `EPERM` for ptrace, process_vm_readv/writev, pidfd_open/getfd, kcmp, bpf, userfaultfd, perf_event_open, io_uring, keyrings, (u)mount and the new mount API, pivot_root, chroot, setns, unshare, clone with namespace flags, modules, kexec, reboot, swap, clock setting, syslog, handle-based open; on any pid but the caller's own (0 or its pid; a thread naming itself by its tid is refused too): sched_setattr/setscheduler/setparam/setaffinity, setpriority and ioprio_set (of a process only: no group, no user), prlimit64, migrate_pages, move_pages, get_robust_list; `kill(-1)`; `socket()` of every family, AF_UNIX included (`network=False`: a runner's channel is an inherited socketpair, and `socketpair()` stays; a pathname socket such as a judge's is reached by `connect()` alone, which Landlock does not handle); `ENOSYS` for clone3 (libc falls back to clone, whose flags can be checked); foreign-ABI syscalls (x32, i386) | classic BPF on `seccomp_data`, x86_64 and aarch64 numbers | Linux ≥ 3.17 (TSYNC), x86_64 and aarch64 |
| `seccomp_all_threads` | the filter covers every thread (torch starts threads at import) | `SECCOMP_FILTER_FLAG_TSYNC` | Linux ≥ 3.17 |
| `uid:N` | runs as uid/gid N (by default one of its own: $KERNEL_GYM_RUNNER_UID_BASE + pid) with only `groups` and no capabilities: the kernel then denies ptrace, `/proc/<pid>/mem`, `/proc/<pid>/fd`, signals and file writes towards root's and every other uid's processes and files | chown -R `workdir` to N, `setgroups(groups)`, `setresgid`, `setresuid` (glibc applies them to every thread) | only when started as root, and where N can read the interpreter (`mount_ns.prepare` makes it so) |
| `no_capabilities` | CapEff is 0 after the uid drop (checked, not assumed) | the kernel clears them on setresuid from root | with `uid:N` |

Not set on purpose: `PR_SET_DUMPABLE` 0 (a judge that is not root could no longer read the runner's /proc). Note that
the kernel itself marks a process non-dumpable when its uid changes (`fs.suid_dumpable`, 0 by default): after the uid
drop the runner's /proc files belong to root, which a root judge reads anyway (CAP_SYS_PTRACE), and which keeps
runners sharing a uid out of each other's memory where Landlock is missing.

One module a mechanism: `landlock` (the `landlock_*` pieces), `seccomp` (the filter), `uid_drop` (`uid:N`,
`no_capabilities`), `libc` (the raw calls). They import nothing beyond the standard library and each other
(relatively), so a test may load this package from its folder in an interpreter without kernel_gym's dependencies.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
from collections.abc import Collection, Sequence
from pathlib import Path

from .errors import ConfinementError
from .landlock import DEFAULT_DEVICES
from .landlock import restrict as restrict_landlock
from .libc import libc, strerror
from .seccomp import install as install_seccomp
from .uid_drop import drop_uid, runner_uid

__all__ = ["DEFAULT_DEVICES", "ConfinementError", "apply", "runner_uid"]

log = logging.getLogger(__name__)

PR_SET_NO_NEW_PRIVS = 38
# Reasons that say a piece was turned off on purpose (logged at INFO, not as a WARNING).
_CHOSEN = ("uid=None", "landlock=False", "seccomp=False", "network=True", "proc=False")


def apply(workdir: str | os.PathLike, *, writable: Sequence[str | os.PathLike] = (), uid: int | str | None = "auto",
          network: bool = False, landlock: bool = True, seccomp: bool = True, proc: bool = False,
          devices: Sequence[str] = DEFAULT_DEVICES, required: Collection[str] = (),
          allow_syscalls: Collection[str] = (), reasons: dict[str, str] | None = None,
          groups: Sequence[int] = (), readable: Sequence[str | os.PathLike] | None = None) -> list[str]:
    """Confine the current process for good; returns the names of the pieces that took effect.

    workdir: the only tree (with `writable` and the `devices` globs) the process may write; chowned to the runner
    uid when it drops root. uid: "auto" ($KERNEL_GYM_RUNNER_UID, default a uid of its own, only as root), an int,
    or None to keep; groups: its supplementary groups after the drop (none by default). network: True leaves TCP and non-unix sockets alone. landlock / seccomp: False skips that piece (tests,
    debugging). proc: True adds `landlock_proc` (no reading of other processes' /proc files; with `landlock`).
    devices: globs of device files granted write and ioctl. required: piece names ("landlock_fs",
    "seccomp", "uid", ...) whose absence raises ConfinementError after everything else was applied. allow_syscalls:
    names to take off the seccomp deny list (e.g. "perf_event_open" should a GPU profiler need it). reasons: a dict
    that receives, for each piece not in force, why. readable: with `landlock`, adds `landlock_read`: the process
    may read, list and execute only beneath these, `workdir`, `writable` and the `devices` (a compile check's
    toolchain); None leaves reads alone.
    """
    workdir = Path(workdir).resolve()
    if not workdir.is_dir():
        raise ValueError(f"workdir {workdir} is not a directory")
    writable_paths = [Path(p).resolve() for p in writable]
    workdir = Path(workdir).resolve()
    if not workdir.is_dir():
        raise ValueError(f"workdir {workdir} is not a directory")
    writable_paths = [Path(p).resolve() for p in writable]
    applied: list[str] = []
    reasons = {} if reasons is None else reasons
    if platform.system() != "Linux":
        reasons.update(dict.fromkeys(("no_new_privs", "landlock_fs", "seccomp", "uid"), "not Linux"))
    else:
        _set_no_new_privs(applied, reasons)
        target = runner_uid(uid)
        # The uid first: glibc applies it to every thread by signalling each one (before Landlock's signal scope
        # exists); the Landlock rules below are then opened as the runner uid, so it can reach what they grant.
        if target is not None:
            drop_uid(target, workdir, applied, reasons, groups)
        else:
            reasons["uid"] = "uid=None"
        if landlock:
            restrict_landlock(workdir, writable_paths, devices, network=network, proc=proc, readable=readable,
                              applied=applied, reasons=reasons)
        else:
            reasons["landlock_fs"] = "landlock=False"
        if seccomp:
            install_seccomp(network, allow_syscalls, applied, reasons)
        else:
            reasons["seccomp"] = "seccomp=False"
    _report(required, applied, reasons)
    return applied


def _set_no_new_privs(applied: list[str], reasons: dict[str, str]) -> None:
    if libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        reasons["no_new_privs"] = f"prctl(PR_SET_NO_NEW_PRIVS): {strerror(ctypes.get_errno())}"
    else:
        applied.append("no_new_privs")


def _report(required: Collection[str], applied: list[str], reasons: dict[str, str]) -> None:
    """Log why each piece is not in force; raise ConfinementError when a `required` one is among them."""
    for piece, why in reasons.items():
        log.log(logging.INFO if why in _CHOSEN else logging.WARNING, "confine: %s not in force: %s", piece, why)
    missing = [p for p in required if p not in applied and not (p == "uid" and any(a.startswith("uid:") for a in applied))]
    if missing:
        raise ConfinementError("; ".join(f"{p}: {reasons.get(p, 'not applied')}" for p in missing))
