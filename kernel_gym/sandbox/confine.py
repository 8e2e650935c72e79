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
| `uid:N` | runs as uid/gid N (by default one of its own: $KERNEL_GYM_RUNNER_UID_BASE + pid) with only `groups` and no capabilities: the kernel then denies ptrace, `/proc/<pid>/mem`, `/proc/<pid>/fd`, signals and file writes towards root's and every other uid's processes and files | chown -R `workdir` to N, `setgroups(groups)`, `setresgid`, `setresuid` (glibc applies them to every thread) | only when started as root, and where N can read the interpreter (`isolation.prepare` makes it so) |
| `no_capabilities` | CapEff is 0 after the uid drop (checked, not assumed) | the kernel clears them on setresuid from root | with `uid:N` |

Not set on purpose: `PR_SET_DUMPABLE` 0 (a judge that is not root could no longer read the runner's /proc). Note that
the kernel itself marks a process non-dumpable when its uid changes (`fs.suid_dumpable`, 0 by default): after the uid
drop the runner's /proc files belong to root, which a root judge reads anyway (CAP_SYS_PTRACE), and which keeps
runners sharing a uid out of each other's memory where Landlock is missing.
"""

from __future__ import annotations

import ctypes
import errno
import glob
import logging
import os
import platform
import stat
import sys
import threading
from collections.abc import Collection, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_UID = 65534  # KERNEL_GYM_RUNNER_UID=65534: the old shared uid
UID_VARIABLE = "KERNEL_GYM_RUNNER_UID"
UID_BASE_VARIABLE, DEFAULT_UID_BASE = "KERNEL_GYM_RUNNER_UID_BASE", 200000  # own uids: base + pid

PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG, PR_GET_PDEATHSIG = 1, 2
PR_SET_SECCOMP = 22

# Landlock (include/uapi/linux/landlock.h); its three syscalls have the same numbers on every architecture.
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_RESTRICT_SELF_TSYNC = 1 << 3  # ABI 8
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

# The write-type rights each ABI knows (reads and execute are never handled: they stay allowed everywhere).
_WRITE_V1 = (FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG | FS_MAKE_SOCK
             | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM)
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV  # all a rule on a file may hold

# Device files a runner opens for writing (or ioctl) after confinement: CUDA's driver opens /dev/nvidia* (and ioctls
# them) at its first call; /dev/null etc. for subprocesses and libraries. /dev/shm is left out on purpose: names there
# are shared by every process, so a grant would let a same-uid runner rewrite the judge's segments. torch only needs
# it to create shared CPU tensors or to decrement the ref-counter of a received CUDA tensor (best effort: it ignores
# the failure); pass writable=["/dev/shm"] to grant it.
DEFAULT_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/nvidia*", "/dev/nvidia-caps")


class ConfinementError(RuntimeError):
    """A piece named in `required=` did not take effect."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # packed in the UAPI: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


_libc_handle: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    global _libc_handle
    if _libc_handle is None:
        _libc_handle = ctypes.CDLL(None, use_errno=True)
        _libc_handle.syscall.restype = ctypes.c_long
    return _libc_handle


def _syscall(number: int, *args) -> int:
    """syscall(2); returns its result or -errno. Plain ints travel as longs (a variadic call would make them C ints)."""
    args = tuple(ctypes.c_long(a) if isinstance(a, int) else a for a in args)
    result = _libc().syscall(ctypes.c_long(number), *args)
    return -ctypes.get_errno() if result == -1 else result


def _strerror(code: int) -> str:
    return f"{errno.errorcode.get(code, code)} ({os.strerror(code)})"


def landlock_abi() -> int:
    """The Landlock ABI version the running kernel offers; 0 when it has none (old kernel, LSM not enabled, non-Linux)."""
    if platform.system() != "Linux":
        return 0
    try:
        version = _syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                           ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _set_no_new_privs() -> str | None:
    if _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS): {_strerror(ctypes.get_errno())}"
    return None


# ---------------------------------------------------------------------------------------------------------- Landlock

def _restrict_self(ruleset: int, abi: int, reasons: dict[str, str]) -> tuple[int, int, int]:
    """landlock_restrict_self on every thread where the ABI can (TSYNC, ABI 8), else on the calling thread; returns
    (result, flags used, other threads)."""
    others = _thread_count() - 1
    flags = LANDLOCK_RESTRICT_SELF_TSYNC if abi >= 8 and others else 0
    result = _syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(flags))
    if result < 0 and flags:
        reasons["landlock_all_threads"] = f"landlock_restrict_self(TSYNC): {_strerror(-result)}"
        flags = 0
        result = _syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0))
    return result, flags, others


def _proc_read_grants(pid: int) -> list[Path]:
    """What the `landlock_proc` layer lets the process read: every top-level entry but /proc, every /proc entry that
    is not a process's folder (nor the self links, which resolve to one), and its own folder."""
    grants = [Path("/", name) for name in sorted(os.listdir("/")) if name != "proc"]
    grants += [Path("/proc", name) for name in sorted(os.listdir("/proc"))
               if not name.isdigit() and name not in ("self", "thread-self")]
    return [p for p in (*grants, Path("/proc", str(pid))) if p.exists()]  # (a dangling top-level link: nothing to read)


def _extra_layer(name: str, handled: int, rules: Sequence[tuple[Path, int]], applied: list[str],
                 reasons: dict[str, str]) -> None:
    """A further Landlock layer `name` (layers add up: an access must pass each) handling `handled` and granting
    each (path, rights) of `rules`; moving a file to another folder (REFER, which every layer denies unless a rule
    grants it) is granted everywhere: the first layer decides where."""
    refer = FS_REFER if landlock_abi() >= 2 else 0
    attr = _RulesetAttr(handled_access_fs=handled | refer)
    ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        reasons[name] = f"landlock_create_ruleset: {_strerror(-ruleset)}"
        return
    try:
        if refer:
            _add_rule(ruleset, Path("/"), refer)
        for path, rights in rules:
            _add_rule(ruleset, path, rights)
        result, _, _ = _restrict_self(ruleset, landlock_abi(), reasons)
        if result < 0:
            reasons[name] = f"landlock_restrict_self: {_strerror(-result)}"
            return
    finally:
        os.close(ruleset)
    applied.append(name)


def _landlock_proc(applied: list[str], reasons: dict[str, str]) -> None:
    """`landlock_proc`: file reads handled, granted by `_proc_read_grants`; folder listing granted everywhere."""
    rules = [(Path("/"), FS_READ_DIR)] + [(p, FS_READ_FILE | FS_READ_DIR) for p in _proc_read_grants(os.getpid())]
    _extra_layer("landlock_proc", FS_READ_FILE | FS_READ_DIR, rules, applied, reasons)


def _landlock_read(grants: Sequence[Path], applied: list[str], reasons: dict[str, str]) -> None:
    """`landlock_read`: reading files, listing folders and executing are handled and granted only beneath
    `grants`."""
    rights = FS_READ_FILE | FS_READ_DIR | FS_EXECUTE
    _extra_layer("landlock_read", rights, [(p, rights) for p in dict.fromkeys(grants) if p.exists()], applied, reasons)


def _write_rights(abi: int) -> int:
    rights = _WRITE_V1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _grants(workdir: Path, writable: Sequence[Path], devices: Sequence[str]) -> list[Path]:
    paths = [workdir, *writable]
    for pattern in devices:
        paths.extend(Path(p) for p in sorted(glob.glob(pattern)))
    return list(dict.fromkeys(paths))


def _create_ruleset(abi: int, network: bool, reasons: dict[str, str]) -> tuple[int, _RulesetAttr]:
    """A ruleset fd (or -errno) and the attributes it handles; the size passed covers only the fields the ABI has."""
    attr = _RulesetAttr(handled_access_fs=_write_rights(abi))
    size = 8
    if abi >= 4:
        size = 16
        if not network:
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
    else:
        reasons["landlock_net"] = f"Landlock ABI {abi} < 4 (Linux < 6.7) has no network rights"
    if abi >= 6:
        size = 24
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
    else:
        reasons["landlock_scope"] = f"Landlock ABI {abi} < 6 (Linux < 6.12) has no signal / abstract-socket scoping"
    ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0 and size > 8:  # e.g. a kernel built without CONFIG_INET refuses network rights: keep the file system
        why = f"landlock_create_ruleset with network/scope rights: {_strerror(-ruleset)}"
        reasons["landlock_net"] = reasons["landlock_scope"] = why
        attr = _RulesetAttr(handled_access_fs=attr.handled_access_fs)
        ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    return ruleset, attr


def _add_rule(ruleset: int, path: Path, handled_fs: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as exc:
        log.warning("confine: no Landlock rule for %s: %s", path, exc)
        return
    try:
        rights = handled_fs if stat.S_ISDIR(os.fstat(fd).st_mode) else handled_fs & _FILE_RIGHTS
        rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        result = _syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule),
                          ctypes.c_uint32(0))
        if result < 0:
            log.warning("confine: Landlock rule for %s refused: %s", path, _strerror(-result))
    finally:
        os.close(fd)


def _landlock(abi: int, grants: Sequence[Path], network: bool, applied: list[str], reasons: dict[str, str]) -> None:
    ruleset, attr = _create_ruleset(abi, network, reasons)
    if ruleset < 0:
        for piece in ("landlock_fs", "landlock_net", "landlock_scope"):
            reasons.setdefault(piece, f"landlock_create_ruleset: {_strerror(-ruleset)}")
        return
    try:
        for path in grants:
            _add_rule(ruleset, path, attr.handled_access_fs)
        result, flags, others = _restrict_self(ruleset, abi, reasons)
        if result < 0:
            for piece in ("landlock_fs", "landlock_net", "landlock_scope"):
                reasons.setdefault(piece, f"landlock_restrict_self: {_strerror(-result)}")
            return
    finally:
        os.close(ruleset)
    applied.append("landlock_fs")
    if attr.handled_access_net:
        applied.append("landlock_net")
    elif abi >= 4:
        reasons.setdefault("landlock_net", "network=True")
    if attr.scoped:
        applied.append("landlock_scope")
    if flags or not others:
        applied.append("landlock_all_threads")
    else:
        reasons.setdefault("landlock_all_threads", (
            f"Landlock ABI {abi} < 8 restricts the calling thread only: {others} thread(s) started before confinement "
            "stay outside the domain (the uid drop and seccomp still cover them)"))


# ----------------------------------------------------------------------------------------------------------- seccomp

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_MODE_FILTER = 2
SECCOMP_FILTER_FLAG_TSYNC = 1
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
AF_UNIX = 1
# clone(2) flags that make new namespaces (CLONE_NEWTIME shares its bit with the exit signal in clone, not clone3).
CLONE_NAMESPACE_FLAGS = 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00020000
PRIO_PROCESS, IOPRIO_WHO_PROCESS = 0, 1

# Syscall numbers from the kernel's UAPI headers (asm/unistd_64.h for x86_64, asm-generic/unistd.h for aarch64).
_DENIED = {  # name: (x86_64, aarch64); None where the architecture has no such call
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "pidfd_open": (434, 434), "pidfd_getfd": (438, 438), "kcmp": (312, 272), "bpf": (321, 280),
    "userfaultfd": (323, 282), "perf_event_open": (298, 241),
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    "keyctl": (250, 219), "add_key": (248, 217), "request_key": (249, 218),
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "chroot": (161, 51),
    "open_tree": (428, 428), "move_mount": (429, 429), "fsopen": (430, 430), "fsconfig": (431, 431),
    "fsmount": (432, 432), "fspick": (433, 433), "mount_setattr": (442, 442),
    "setns": (308, 268), "unshare": (272, 97),
    "init_module": (175, 105), "finit_module": (313, 273), "delete_module": (176, 106),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294), "reboot": (169, 142),
    "swapon": (167, 224), "swapoff": (168, 225), "acct": (163, 89), "quotactl": (179, 60), "quotactl_fd": (443, 443),
    "settimeofday": (164, 170), "clock_settime": (227, 112), "adjtimex": (159, 171), "clock_adjtime": (305, 266),
    "sethostname": (170, 161), "setdomainname": (171, 162), "syslog": (103, 116),
    "open_by_handle_at": (304, 265), "name_to_handle_at": (303, 264), "lookup_dcookie": (212, 18),
    "iopl": (172, None), "ioperm": (173, None),
}
# Calls that act on another process named by its pid: allowed only on the caller itself (the pid 0, or the pid of the
# process that built the filter). name: ((x86_64, aarch64), the argument holding the pid, (argument, value) it must
# have first or None). Each changes how fast or how long another process runs (the reference's runner under
# SCHED_DEADLINE, a nice of 19, one CPU, an rlimit, idle I/O, its pages moved to a far NUMA node) or reads its state.
_OWN_PID_ONLY = {
    "sched_setparam": ((142, 118), 0, None), "sched_setscheduler": ((144, 119), 0, None),
    "sched_setaffinity": ((203, 122), 0, None), "sched_setattr": ((314, 274), 0, None),
    "prlimit64": ((302, 261), 0, None), "migrate_pages": ((256, 238), 0, None), "move_pages": ((279, 239), 0, None),
    "get_robust_list": ((274, 100), 0, None),
    "setpriority": ((141, 140), 1, (0, PRIO_PROCESS)),  # not PRIO_PGRP / PRIO_USER (every process of a uid)
    "ioprio_set": ((251, 30), 1, (0, IOPRIO_WHO_PROCESS)),  # not IOPRIO_WHO_PGRP / IOPRIO_WHO_USER
}
_KILL = {"x86_64": 62, "aarch64": 129}  # kill(-1, sig): every process the caller may signal
_SOCKET, _CLONE, _CLONE3 = {"x86_64": 41, "aarch64": 198}, {"x86_64": 56, "aarch64": 220}, 435
_SECCOMP = {"x86_64": 317, "aarch64": 277}
_ARCHES = {"x86_64": (0, AUDIT_ARCH_X86_64), "amd64": (0, AUDIT_ARCH_X86_64),
           "aarch64": (1, AUDIT_ARCH_AARCH64), "arm64": (1, AUDIT_ARCH_AARCH64)}
# Names `allow` takes besides those of _DENIED and _OWN_PID_ONLY (which lift the pid check).
UNIX_SOCKETS, KILL_ALL = "socket(AF_UNIX)", "kill(-1)"

# Classic BPF opcodes.
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # struct seccomp_data; arg0's low word on a little-endian machine


def _arg(n: int, high: bool = False) -> int:
    """Offset of argument n's low (or high) 32-bit word in seccomp_data (args are u64; x86_64, aarch64: little-endian)."""
    return _OFF_ARG0 + 8 * n + (4 if high else 0)


def denied_syscalls(network: bool = False, allow: Collection[str] = ()) -> list[str]:
    """The names the seccomp filter answers with EPERM (socket: every family, AF_UNIX too unless allowed, socketpair
    stays; clone: namespace flags; the _OWN_PID_ONLY calls on any pid but the caller's own; kill(-1))."""
    return (sorted(set(_DENIED) - set(allow)) + ["clone(CLONE_NEW*)"]
            + [f"{name}(other pid)" for name in _OWN_PID_ONLY if name not in allow]
            + ([] if KILL_ALL in allow else [KILL_ALL])
            + ([] if network else ["socket(!AF_UNIX)"] + ([] if UNIX_SOCKETS in allow else [UNIX_SOCKETS])))


def seccomp_program(machine: str | None = None, network: bool = False, allow: Collection[str] = (),
                    pid: int | None = None) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions, or ValueError for an architecture without a table. `pid`: the
    process the _OWN_PID_ONLY calls may still name (besides 0); the caller's own by default."""
    machine = (machine or platform.machine()).lower()
    if machine not in _ARCHES:
        raise ValueError(f"no syscall table for {machine}")
    unknown = set(allow) - set(_DENIED) - set(_OWN_PID_ONLY) - {UNIX_SOCKETS, KILL_ALL}
    if unknown:
        raise ValueError(f"not in the deny list: {sorted(unknown)}")
    pid = os.getpid() if pid is None else pid
    column, audit_arch = _ARCHES[machine]
    arch = "x86_64" if column == 0 else "aarch64"
    eperm, enosys = SECCOMP_RET_ERRNO | errno.EPERM, SECCOMP_RET_ERRNO | errno.ENOSYS
    # Instructions with symbolic jump targets ("allow", "deny", ...) resolved below.
    code: list[tuple] = [(_LD_W_ABS, None, None, _OFF_ARCH), (_JEQ_K, None, "deny", audit_arch),
                         (_LD_W_ABS, None, None, _OFF_NR)]
    if arch == "x86_64":
        code.append((_JGE_K, "deny", None, X32_SYSCALL_BIT))
    for name, numbers in _DENIED.items():
        if numbers[column] is not None and name not in allow:
            code.append((_JEQ_K, "deny", None, numbers[column]))
    own_pid_only = {name: rule for name, rule in _OWN_PID_ONLY.items() if name not in allow}
    for name, (numbers, _, _) in own_pid_only.items():
        code.append((_JEQ_K, f"pid:{name}", None, numbers[column]))
    if KILL_ALL not in allow:
        code.append((_JEQ_K, "kill", None, _KILL[arch]))
    code.append((_JEQ_K, "enosys", None, _CLONE3))
    code.append((_JEQ_K, "clone", None, _CLONE[arch]))
    if not network:
        code.append((_JEQ_K, "socket", None, _SOCKET[arch]))
    code.append((_RET_K, None, None, SECCOMP_RET_ALLOW))
    # Argument checks; classic BPF jumps only forward, so each block ends in a jump to the returns at the end. A
    # 64-bit argument is two 32-bit words: a pid passes only with a zero high word and a low word of 0 or `pid`.
    for name, (_, arg, first) in own_pid_only.items():
        code.append(("label", f"pid:{name}"))
        if first is not None:
            code += [(_LD_W_ABS, None, None, _arg(first[0], high=True)), (_JEQ_K, None, "deny", 0),
                     (_LD_W_ABS, None, None, _arg(first[0])), (_JEQ_K, None, "deny", first[1])]
        code += [(_LD_W_ABS, None, None, _arg(arg, high=True)), (_JEQ_K, None, "deny", 0),
                 (_LD_W_ABS, None, None, _arg(arg)), (_JEQ_K, "allow", None, 0), (_JEQ_K, "allow", "deny", pid)]
    if KILL_ALL not in allow:  # the kernel reads kill's pid as a 32-bit int: the low word alone decides
        code += [("label", "kill"), (_LD_W_ABS, None, None, _arg(0)), (_JEQ_K, "deny", "allow", 0xFFFFFFFF)]
    code += [("label", "clone"), (_LD_W_ABS, None, None, _OFF_ARG0), (_JSET_K, "deny", "allow", CLONE_NAMESPACE_FLAGS)]
    if not network:  # every family but AF_UNIX; AF_UNIX too (pathname sockets: a judge's) unless allowed
        unix = "allow" if UNIX_SOCKETS in allow else "deny"
        code += [("label", "socket"), (_LD_W_ABS, None, None, _OFF_ARG0), (_JEQ_K, unix, "deny", AF_UNIX)]
    code += [("label", "allow"), (_RET_K, None, None, SECCOMP_RET_ALLOW), ("label", "enosys"),
             (_RET_K, None, None, enosys), ("label", "deny"), (_RET_K, None, None, eperm)]
    labels = {}
    program: list[tuple] = []
    for item in code:
        if item[0] == "label":
            labels[item[1]] = len(program)
        else:
            program.append(item)
    resolved = []
    for index, (op, jt, jf, k) in enumerate(program):
        def offset(target, index=index):
            if target is None:
                return 0
            delta = labels[target] - index - 1
            if not 0 <= delta <= 255:
                raise ValueError(f"jump to {target} out of range")
            return delta
        resolved.append((op, offset(jt), offset(jf), k))
    return resolved


def _seccomp(network: bool, allow: Collection[str], applied: list[str], reasons: dict[str, str]) -> None:
    try:
        program = seccomp_program(network=network, allow=allow)
    except ValueError as exc:
        reasons["seccomp"] = reasons["seccomp_all_threads"] = str(exc)
        return
    filters = (_SockFilter * len(program))(*[_SockFilter(*instruction) for instruction in program])
    prog = _SockFprog(len(program), filters)
    arch = "x86_64" if _ARCHES[platform.machine().lower()][0] == 0 else "aarch64"
    result = _syscall(_SECCOMP[arch], SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(prog))
    if result == 0:
        applied += ["seccomp", "seccomp_all_threads"]
        return
    why = f"seccomp(TSYNC): {_strerror(-result) if result < 0 else f'thread {result} could not be synchronized'}"
    # Without TSYNC (kernel < 3.17, or a thread with a foreign filter): this thread and its future children only.
    if _libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0:
        applied.append("seccomp")
        reasons["seccomp_all_threads"] = why
    else:
        reasons["seccomp"] = reasons["seccomp_all_threads"] = (
            f"{why}; prctl(PR_SET_SECCOMP): {_strerror(ctypes.get_errno())}")


# --------------------------------------------------------------------------------------------------------------- uid

def runner_uid(uid: int | str | None = "auto") -> int | None:
    """The uid `apply` drops to: `uid` itself, None to keep, or for "auto" $KERNEL_GYM_RUNNER_UID: a number (one uid
    shared by every runner), "none" to keep the current uid, unset or "own" a uid of this process's own,
    $KERNEL_GYM_RUNNER_UID_BASE (200000) + its pid (`kernel_gym.sandbox.isolation`, which also gives the roles that
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


def _drop_uid(uid: int, workdir: Path, applied: list[str], reasons: dict[str, str],
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
                              "namespace makes it reachable: kernel_gym.sandbox.isolation.prepare, which needs "
                              "CAP_SYS_ADMIN)")
            return
    # the kernel clears the parent-death signal when the credentials change (commit_creds): armed again below, or
    # a runner would outlive its judge or fork server
    death_signal, parent = ctypes.c_int(0), os.getppid()
    _libc().prctl(PR_GET_PDEATHSIG, ctypes.byref(death_signal), 0, 0, 0)
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
            _libc().prctl(PR_SET_PDEATHSIG, death_signal.value, 0, 0, 0)
            if os.getppid() != parent:  # the parent ended in between: what the signal would have done
                os.kill(os.getpid(), death_signal.value)
    applied.append(f"uid:{uid}")
    caps = _capabilities()  # a setresuid from root to another uid clears them (no SECBIT_KEEP_CAPS): checked
    if caps == 0:
        applied.append("no_capabilities")
    else:
        reasons["no_capabilities"] = f"CapEff {caps:#x} after the uid drop" if caps else "CapEff unreadable"


# ------------------------------------------------------------------------------------------------------------ apply

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
    applied: list[str] = []
    reasons = {} if reasons is None else reasons
    if platform.system() != "Linux":
        reasons.update(dict.fromkeys(("no_new_privs", "landlock_fs", "seccomp", "uid"), "not Linux"))
    else:
        why = _set_no_new_privs()
        if why is None:
            applied.append("no_new_privs")
        else:
            reasons["no_new_privs"] = why
        target = runner_uid(uid)
        # The uid first: glibc applies it to every thread by signalling each one (before Landlock's signal scope
        # exists); the Landlock rules below are then opened as the runner uid, so it can reach what they grant.
        if target is not None:
            _drop_uid(target, workdir, applied, reasons, groups)
        else:
            reasons["uid"] = "uid=None"
        if landlock:
            abi = landlock_abi()
            if abi <= 0:
                reasons["landlock_fs"] = "no Landlock (Linux < 5.13, or not in the kernel's LSM list)"
            else:  # without no_new_privs only CAP_SYS_ADMIN may restrict itself: the kernel decides
                _landlock(abi, _grants(workdir, writable_paths, devices), network, applied, reasons)
                if proc:
                    _landlock_proc(applied, reasons)
                else:
                    reasons["landlock_proc"] = "proc=False"
                if readable is not None:
                    _landlock_read([*_grants(workdir, writable_paths, devices), *(Path(p) for p in readable)],
                                   applied, reasons)
        else:
            reasons["landlock_fs"] = "landlock=False"
        if seccomp:
            _seccomp(network, allow_syscalls, applied, reasons)
        else:
            reasons["seccomp"] = "seccomp=False"
    for piece, why in reasons.items():
        chosen = why in ("uid=None", "landlock=False", "seccomp=False", "network=True", "proc=False")
        log.log(logging.INFO if chosen else logging.WARNING, "confine: %s not in force: %s", piece, why)
    missing = [p for p in required if p not in applied and not (p == "uid" and any(a.startswith("uid:") for a in applied))]
    if missing:
        raise ConfinementError("; ".join(f"{p}: {reasons.get(p, 'not applied')}" for p in missing))
    return applied

