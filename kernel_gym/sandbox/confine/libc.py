"""The C library through ctypes: the raw system calls the confinement makes, and the errors they answer."""

from __future__ import annotations

import ctypes
import errno
import os
import threading

_libc_handle: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc_handle
    if _libc_handle is None:
        _libc_handle = ctypes.CDLL(None, use_errno=True)
        _libc_handle.syscall.restype = ctypes.c_long
    return _libc_handle


def syscall(number: int, *args) -> int:
    """syscall(2); returns its result or -errno. Plain ints travel as longs (a variadic call would make them C ints)."""
    args = tuple(ctypes.c_long(a) if isinstance(a, int) else a for a in args)
    result = libc().syscall(ctypes.c_long(number), *args)
    return -ctypes.get_errno() if result == -1 else result


def strerror(code: int) -> str:
    return f"{errno.errorcode.get(code, code)} ({os.strerror(code)})"


def thread_count() -> int:
    """The threads of this process (every one, native ones included), as /proc/self/task lists them."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()
