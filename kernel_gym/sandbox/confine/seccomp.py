"""Seccomp: the confinement's system-call filter (the `seccomp` pieces of `apply`).

A classic BPF program on `seccomp_data`, x86_64 and aarch64 numbers: EPERM for the calls of `_DENIED`; the calls of
`_OWN_PID_ONLY` on any pid but the caller's own; `kill(-1)`; clone with namespace flags; `socket()` of every family
(`network=False`; AF_UNIX too unless allowed); ENOSYS for clone3 (libc falls back to clone, whose flags can be
checked); EPERM for foreign-ABI syscalls (x32, i386). The table in `kernel_gym.sandbox.confine` says where it holds.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from collections.abc import Collection

from .libc import libc, strerror, syscall

PR_SET_SECCOMP = 22

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

_RETURNS = [("label", "allow"), (_RET_K, None, None, SECCOMP_RET_ALLOW),
            ("label", "enosys"), (_RET_K, None, None, SECCOMP_RET_ERRNO | errno.ENOSYS),
            ("label", "deny"), (_RET_K, None, None, SECCOMP_RET_ERRNO | errno.EPERM)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


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
    own_pid_only = {name: rule for name, rule in _OWN_PID_ONLY.items() if name not in allow}
    # Instructions with symbolic jump targets ("allow", "deny", ...) resolved by _resolve.
    code = [*_dispatch(machine, network, allow, own_pid_only), *_argument_checks(network, allow, own_pid_only, pid),
            *_RETURNS]
    return _resolve(code)


def _dispatch(machine: str, network: bool, allow: Collection[str], own_pid_only: dict[str, tuple]) -> list[tuple]:
    """The filter's head: the architecture check, then one jump per syscall number (to "deny", or to the argument
    check of that call), then "allow" for every other call."""
    column, audit_arch = _ARCHES[machine]
    arch = "x86_64" if column == 0 else "aarch64"
    code: list[tuple] = [(_LD_W_ABS, None, None, _OFF_ARCH), (_JEQ_K, None, "deny", audit_arch),
                         (_LD_W_ABS, None, None, _OFF_NR)]
    if arch == "x86_64":
        code.append((_JGE_K, "deny", None, X32_SYSCALL_BIT))
    for name, numbers in _DENIED.items():
        if numbers[column] is not None and name not in allow:
            code.append((_JEQ_K, "deny", None, numbers[column]))
    for name, (numbers, _, _) in own_pid_only.items():
        code.append((_JEQ_K, f"pid:{name}", None, numbers[column]))
    if KILL_ALL not in allow:
        code.append((_JEQ_K, "kill", None, _KILL[arch]))
    code.append((_JEQ_K, "enosys", None, _CLONE3))
    code.append((_JEQ_K, "clone", None, _CLONE[arch]))
    if not network:
        code.append((_JEQ_K, "socket", None, _SOCKET[arch]))
    code.append((_RET_K, None, None, SECCOMP_RET_ALLOW))
    return code


def _argument_checks(network: bool, allow: Collection[str], own_pid_only: dict[str, tuple], pid: int) -> list[tuple]:
    """One labelled block per call whose arguments decide; classic BPF jumps only forward, so each block ends in a
    jump to the returns at the end. A 64-bit argument is two 32-bit words: a pid passes only with a zero high word
    and a low word of 0 or `pid`."""
    code: list[tuple] = []
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
    return code


def _resolve(code: list[tuple]) -> list[tuple[int, int, int, int]]:
    """Labels taken out, symbolic jump targets turned into the forward offsets classic BPF takes (0 to 255)."""
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


def install(network: bool, allow: Collection[str], applied: list[str], reasons: dict[str, str]) -> None:
    """Load the filter on every thread (TSYNC), else on the calling thread alone, saying which in `applied` (or why
    not in `reasons`)."""
    try:
        program = seccomp_program(network=network, allow=allow)
    except ValueError as exc:
        reasons["seccomp"] = reasons["seccomp_all_threads"] = str(exc)
        return
    filters = (_SockFilter * len(program))(*[_SockFilter(*instruction) for instruction in program])
    prog = _SockFprog(len(program), filters)
    arch = "x86_64" if _ARCHES[platform.machine().lower()][0] == 0 else "aarch64"
    result = syscall(_SECCOMP[arch], SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(prog))
    if result == 0:
        applied += ["seccomp", "seccomp_all_threads"]
        return
    why = f"seccomp(TSYNC): {strerror(-result) if result < 0 else f'thread {result} could not be synchronized'}"
    # Without TSYNC (kernel < 3.17, or a thread with a foreign filter): this thread and its future children only.
    if libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0:
        applied.append("seccomp")
        reasons["seccomp_all_threads"] = why
    else:
        reasons["seccomp"] = reasons["seccomp_all_threads"] = (
            f"{why}; prctl(PR_SET_SECCOMP): {strerror(ctypes.get_errno())}")
