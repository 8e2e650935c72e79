"""Landlock: the confinement's file-system, network and scope rules (the `landlock_*` pieces of `apply`).

The first layer handles every write-type right the running ABI knows and grants it only beneath the job's folders and
a few device files, denies TCP bind and connect (ABI 4) and scopes signals and abstract unix sockets to the domain
(ABI 6); the opt-in layers add up on it: `landlock_proc` (no reading of other processes' /proc files) and
`landlock_read` (reads and execution only beneath given folders). The table in `kernel_gym.sandbox.confine` says what
each piece stops and where it holds.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import platform
import stat
from collections.abc import Sequence
from pathlib import Path

from .libc import strerror, syscall, thread_count

log = logging.getLogger(__name__)

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


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # packed in the UAPI: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The Landlock ABI version the running kernel offers; 0 when it has none (old kernel, LSM not enabled, non-Linux)."""
    if platform.system() != "Linux":
        return 0
    try:
        version = syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                          ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def restrict(workdir: Path, writable: Sequence[Path], devices: Sequence[str], *, network: bool, proc: bool,
             readable: Sequence[str | os.PathLike] | None, applied: list[str], reasons: dict[str, str]) -> None:
    """Every Landlock layer `apply` asks for (see its arguments), each piece that took effect added to `applied`,
    each one that did not given its reason in `reasons`."""
    abi = landlock_abi()
    if abi <= 0:
        reasons["landlock_fs"] = "no Landlock (Linux < 5.13, or not in the kernel's LSM list)"
        return
    # without no_new_privs only CAP_SYS_ADMIN may restrict itself: the kernel decides
    _landlock(abi, _grants(workdir, writable, devices), network, applied, reasons)
    if proc:
        _landlock_proc(applied, reasons)
    else:
        reasons["landlock_proc"] = "proc=False"
    if readable is not None:
        _landlock_read([*_grants(workdir, writable, devices), *(Path(p) for p in readable)], applied, reasons)


def _restrict_self(ruleset: int, abi: int, reasons: dict[str, str]) -> tuple[int, int, int]:
    """landlock_restrict_self on every thread where the ABI can (TSYNC, ABI 8), else on the calling thread; returns
    (result, flags used, other threads)."""
    others = thread_count() - 1
    flags = LANDLOCK_RESTRICT_SELF_TSYNC if abi >= 8 and others else 0
    result = syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(flags))
    if result < 0 and flags:
        reasons["landlock_all_threads"] = f"landlock_restrict_self(TSYNC): {strerror(-result)}"
        flags = 0
        result = syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0))
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
    ruleset = syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        reasons[name] = f"landlock_create_ruleset: {strerror(-ruleset)}"
        return
    try:
        if refer:
            _add_rule(ruleset, Path("/"), refer)
        for path, rights in rules:
            _add_rule(ruleset, path, rights)
        result, _, _ = _restrict_self(ruleset, landlock_abi(), reasons)
        if result < 0:
            reasons[name] = f"landlock_restrict_self: {strerror(-result)}"
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
    ruleset = syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0 and size > 8:  # e.g. a kernel built without CONFIG_INET refuses network rights: keep the file system
        why = f"landlock_create_ruleset with network/scope rights: {strerror(-ruleset)}"
        reasons["landlock_net"] = reasons["landlock_scope"] = why
        attr = _RulesetAttr(handled_access_fs=attr.handled_access_fs)
        ruleset = syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
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
        result = syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule),
                         ctypes.c_uint32(0))
        if result < 0:
            log.warning("confine: Landlock rule for %s refused: %s", path, strerror(-result))
    finally:
        os.close(fd)


def _landlock(abi: int, grants: Sequence[Path], network: bool, applied: list[str], reasons: dict[str, str]) -> None:
    ruleset, attr = _create_ruleset(abi, network, reasons)
    if ruleset < 0:
        for piece in ("landlock_fs", "landlock_net", "landlock_scope"):
            reasons.setdefault(piece, f"landlock_create_ruleset: {strerror(-ruleset)}")
        return
    try:
        for path in grants:
            _add_rule(ruleset, path, attr.handled_access_fs)
        result, flags, others = _restrict_self(ruleset, abi, reasons)
        if result < 0:
            for piece in ("landlock_fs", "landlock_net", "landlock_scope"):
                reasons.setdefault(piece, f"landlock_restrict_self: {strerror(-result)}")
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
