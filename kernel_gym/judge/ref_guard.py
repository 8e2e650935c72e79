"""Is the reference runner as the judge left it? What the kernel lets another process change about it, read by the judge.

A candidate with CAP_SYS_NICE and no seccomp rule against it put the reference's runner under `SCHED_DEADLINE` (0.1 ms
per 100 ms) during timing: 25x for an honest ~0.3x kernel, and the slot's next honest job read 130x-576x, since the
reference runner is reused. Seccomp now denies those calls on any pid but the caller's own (sandbox/confine/seccomp.py); this
module is the judge's own check that nothing got through, before the reference runner serves another job:

    baseline = ref_guard.snapshot(pid)      # when the runner is ready
    why = ref_guard.changed(pid, baseline)  # before every job: None, or what differs, in words (replace the runner)

Per thread (`/proc/<pid>/task`): scheduling policy and priority (`sched_getscheduler`, `sched_getparam`), everything
`sched_getattr` reports (policy flags, nice, the deadline runtime/deadline/period, utilization clamps: a `uclamp_max`
slows a task as surely as a nice value), nice (`getpriority`), CPU affinity, I/O priority (`ioprio_get`) and cgroup.
Per process: every resource limit (`prlimit`), `oom_score_adj`, the autogroup's nice and the timer slack. A thread
that did not exist at the baseline (torch starts threads on demand) is compared against the main thread's baseline.
Every reading is best effort: one the kernel refuses is left out, and only readings present on both sides compare.
The judge reads them as root, or as the runner's own uid.
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path
from typing import Any

try:
    import resource
except ImportError:  # pragma: no cover - not Unix
    resource = None  # type: ignore[assignment]

_SCHED_GETATTR = {"x86_64": 315, "amd64": 315, "aarch64": 275, "arm64": 275}
_IOPRIO_GET = {"x86_64": 252, "amd64": 252, "aarch64": 31, "arm64": 31}
IOPRIO_WHO_PROCESS = 1
POLICIES = {0: "SCHED_OTHER", 1: "SCHED_FIFO", 2: "SCHED_RR", 3: "SCHED_BATCH", 5: "SCHED_IDLE", 6: "SCHED_DEADLINE"}


class _SchedAttr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("sched_policy", ctypes.c_uint32), ("sched_flags", ctypes.c_uint64),
                ("sched_nice", ctypes.c_int32), ("sched_priority", ctypes.c_uint32),
                ("sched_runtime", ctypes.c_uint64), ("sched_deadline", ctypes.c_uint64),
                ("sched_period", ctypes.c_uint64), ("sched_util_min", ctypes.c_uint32),
                ("sched_util_max", ctypes.c_uint32)]


_libc_handle: ctypes.CDLL | None = None


def _syscall(number: int, *args: Any) -> int:
    global _libc_handle
    if _libc_handle is None:
        _libc_handle = ctypes.CDLL(None, use_errno=True)
        _libc_handle.syscall.restype = ctypes.c_long
    return _libc_handle.syscall(ctypes.c_long(number), *args)


def _sched_attr(tid: int) -> dict[str, int] | None:
    number = _SCHED_GETATTR.get(platform.machine().lower())
    if number is None:
        return None
    attr = _SchedAttr()
    if _syscall(number, ctypes.c_long(tid), ctypes.byref(attr), ctypes.c_uint(ctypes.sizeof(attr)),
                ctypes.c_uint(0)) != 0:
        return None
    return {name: getattr(attr, name) for name, _ in _SchedAttr._fields_ if name != "size"}


def _ioprio(tid: int) -> int | None:
    number = _IOPRIO_GET.get(platform.machine().lower())
    if number is None:
        return None
    value = _syscall(number, ctypes.c_long(IOPRIO_WHO_PROCESS), ctypes.c_long(tid))
    return None if value < 0 else value


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _policy(value: int) -> str:
    return POLICIES.get(value, str(value))


def _thread(pid: int, tid: int) -> dict[str, Any] | None:
    """One thread's readings; None when it is gone."""
    out: dict[str, Any] = {}
    readers = {
        "policy": lambda: _policy(os.sched_getscheduler(tid)),
        "priority": lambda: os.sched_getparam(tid).sched_priority,
        "nice": lambda: os.getpriority(os.PRIO_PROCESS, tid),
        "affinity": lambda: sorted(os.sched_getaffinity(tid)),
        "sched_attr": lambda: _sched_attr(tid),
        "ioprio": lambda: _ioprio(tid),
        "cgroup": lambda: _read(Path(f"/proc/{pid}/task/{tid}/cgroup")),
    }
    for name, read in readers.items():
        try:
            value = read()
        except ProcessLookupError:
            return None
        except (OSError, AttributeError):
            continue
        if value is not None:
            out[name] = value
    return out


def _rlimits(pid: int) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    if resource is None or not hasattr(resource, "prlimit"):
        return out
    for name in sorted(n for n in dir(resource) if n.startswith("RLIMIT_")):
        try:
            out[name] = list(resource.prlimit(pid, getattr(resource, name)))
        except (OSError, ValueError):
            continue
    return out


def snapshot(pid: int) -> dict[str, Any]:
    """Everything another process could have changed about `pid` that bears on its speed or survival."""
    threads: dict[str, dict[str, Any]] = {}
    try:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        tids = [pid]
    for tid in tids:
        reading = _thread(pid, tid)
        if reading is not None:
            threads[str(tid)] = reading
    process: dict[str, Any] = {"rlimits": _rlimits(pid)}
    for name in ("oom_score_adj", "autogroup", "timerslack_ns"):
        value = _read(Path(f"/proc/{pid}/{name}"))
        if value is not None:
            process[name] = value
    return {"pid": pid, "threads": threads, "process": process}


def _differences(where: str, before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    out = []
    for name in sorted(set(before) & set(now)):
        if isinstance(before[name], dict) and isinstance(now[name], dict):
            out += [f"{where}{name}.{k}: {before[name][k]} -> {now[name][k]}"
                    for k in sorted(set(before[name]) & set(now[name])) if before[name][k] != now[name][k]]
        elif before[name] != now[name]:
            out.append(f"{where}{name}: {_show(before[name])} -> {_show(now[name])}")
    return out


def _show(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value) and len(value) > 4:
        return _ranges(value)
    return str(value)


def _ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (an affinity mask as taskset prints it)."""
    parts, start = [], None
    for i, cpu in enumerate(cpus):
        if start is None:
            start = cpu
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            parts.append(str(start) if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(parts)


def changed(pid: int, baseline: dict[str, Any]) -> str | None:
    """What differs between `pid` now and its `baseline` snapshot, in words; None when nothing does."""
    now = snapshot(pid)
    main = baseline["threads"].get(str(pid)) or next(iter(baseline["threads"].values()), {})
    diffs = _differences("", baseline["process"], now["process"])
    for tid, reading in now["threads"].items():
        before = baseline["threads"].get(tid, main)
        diffs += _differences(f"thread {tid}: " if tid != str(pid) else "", before, reading)
    if not diffs:
        return None
    return f"the reference runner (pid {pid}) was changed since it was started: " + "; ".join(diffs)
