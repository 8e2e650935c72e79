"""The judge's check that the reference runner is as it left it (judge/ref_guard.py), against a real child process
changed from outside, as a candidate would change the reference's runner: nice, affinity, scheduling policy (and
SCHED_DEADLINE as root), utilization clamp, rlimits; a thread started after the baseline is held to the main thread's."""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import subprocess
import sys
import textwrap
import time

import pytest

from kernel_gym.judge import ref_guard

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux scheduling interfaces")

# A stand-in for a reference runner: a few threads that sleep; "more" on stdin starts one more thread.
CHILD = textwrap.dedent("""
    import sys, threading, time
    def idle():
        while True:
            time.sleep(0.05)
    for _ in range(2):
        threading.Thread(target=idle, daemon=True).start()
    print("ready", flush=True)
    for line in sys.stdin:
        threading.Thread(target=idle, daemon=True).start()
        time.sleep(0.2)
        print("more", flush=True)
""")


@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    yield proc
    proc.kill()
    proc.wait()


def tids(pid: int) -> list[int]:
    return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))


def test_an_untouched_runner_reads_unchanged(child):
    baseline = ref_guard.snapshot(child.pid)
    assert len(baseline["threads"]) == 3
    main = baseline["threads"][str(child.pid)]
    assert {"policy", "priority", "nice", "affinity", "cgroup"} <= set(main)
    assert baseline["process"]["rlimits"]
    time.sleep(0.2)
    assert ref_guard.changed(child.pid, baseline) is None
    child.stdin.write("more\n")  # a thread of its own, as torch starts them on demand: same values, no change
    child.stdin.flush()
    assert child.stdout.readline().strip() == "more"
    assert len(tids(child.pid)) == 4
    assert ref_guard.changed(child.pid, baseline) is None


def test_nice_of_one_thread(child):
    baseline = ref_guard.snapshot(child.pid)
    worker = tids(child.pid)[-1]
    os.setpriority(os.PRIO_PROCESS, worker, 19)
    why = ref_guard.changed(child.pid, baseline)
    assert why and f"thread {worker}: nice: 0 -> 19" in why, why


def test_affinity(child):
    cpus = sorted(os.sched_getaffinity(child.pid))
    if len(cpus) < 2:
        pytest.skip("one CPU: no affinity to narrow")
    baseline = ref_guard.snapshot(child.pid)
    os.sched_setaffinity(child.pid, cpus[:1])
    why = ref_guard.changed(child.pid, baseline)
    assert why and f"affinity: {ref_guard._show(cpus)} -> {cpus[:1]}" in why, why


def test_scheduling_policy(child):
    baseline = ref_guard.snapshot(child.pid)
    os.sched_setscheduler(child.pid, os.SCHED_IDLE, os.sched_param(0))
    why = ref_guard.changed(child.pid, baseline)
    assert why and "policy: SCHED_OTHER -> SCHED_IDLE" in why, why


def test_rlimit(child):
    baseline = ref_guard.snapshot(child.pid)
    soft, hard = resource.prlimit(child.pid, resource.RLIMIT_NOFILE)
    resource.prlimit(child.pid, resource.RLIMIT_NOFILE, (64, hard))
    why = ref_guard.changed(child.pid, baseline)
    assert why and f"rlimits.RLIMIT_NOFILE: [{soft}, {hard}] -> [64, {hard}]" in why, why


def _sched_setattr(tid: int, **fields) -> int:
    number = {"x86_64": 314, "aarch64": 274}.get(platform.machine())
    if number is None:
        pytest.skip("no sched_setattr number for this architecture")
    attr = ref_guard._SchedAttr(size=ctypes.sizeof(ref_guard._SchedAttr), **fields)
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.syscall(ctypes.c_long(number), ctypes.c_long(tid), ctypes.byref(attr), ctypes.c_uint(0))
    return 0 if result == 0 else ctypes.get_errno()


def test_sched_deadline_on_a_new_thread(child):
    """The attack of the issue (0.1 ms of CPU per 100 ms), on a thread started after the baseline: compared against
    the main thread's values."""
    baseline = ref_guard.snapshot(child.pid)
    child.stdin.write("more\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "more"
    new = tids(child.pid)[-1]
    assert str(new) not in baseline["threads"]
    err = _sched_setattr(new, sched_policy=6, sched_runtime=100_000, sched_deadline=100_000_000,
                         sched_period=100_000_000)
    if err:
        pytest.skip(f"SCHED_DEADLINE refused here ({os.strerror(err)}; euid {os.geteuid()})")
    why = ref_guard.changed(child.pid, baseline)
    assert why and f"thread {new}: policy: SCHED_OTHER -> SCHED_DEADLINE" in why, why
    assert "sched_attr.sched_period: 0 -> 100000000" in why, why


def test_utilization_clamp(child):
    """`uclamp_max` slows a task on frequency-scaled CPUs without touching its policy or nice."""
    baseline = ref_guard.snapshot(child.pid)
    err = _sched_setattr(child.pid, sched_policy=0, sched_flags=0x08 | 0x20 | 0x40,  # KEEP_PARAMS, UTIL_CLAMP_MIN|MAX
                         sched_util_min=0, sched_util_max=64)
    if err:
        pytest.skip(f"utilization clamping refused here ({os.strerror(err)}): a kernel without CONFIG_UCLAMP_TASK")
    why = ref_guard.changed(child.pid, baseline)
    assert why and "sched_attr.sched_util_max" in why, why


def test_a_gone_process_is_not_a_crash():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    snap = ref_guard.snapshot(proc.pid)
    assert snap["threads"] == {} or ref_guard.changed(proc.pid, snap) is None
