"""A confined runner has no power over other processes: it cannot re-schedule, re-prioritise, re-pin, re-limit or
re-queue the I/O of another pid (seccomp: `sandbox/confine/seccomp.py`'s `_OWN_PID_ONLY`), cannot signal every process at once
(`kill(-1)`), and cannot reach a unix socket it did not inherit, by path (the judge's) or in the abstract namespace
(seccomp denies `socket(AF_UNIX)`; Landlock's scope also stops the abstract one). It keeps all of that on itself.

The attack of issue 36: a candidate put the reference's runner under SCHED_DEADLINE (0.1 ms per 100 ms) during timing
(25x for an honest ~0.3x kernel, and the slot's next honest job read 130x-576x). Each attack runs against a *victim*
the test starts (a sibling of the attacker, as the reference runner is the candidate's), once unconfined (it must
work there: no assertion of "denied" passes vacuously), then confined; the victim is read with `judge/ref_guard.py`.
The last test runs the attack through the real pipeline: a genuine Triton kernel whose forward() goes for the
reference runner of its own slot.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest

from kernel_gym.judge import ref_guard
from kernel_gym.sandbox.confine import landlock, seccomp

ROOT = Path(__file__).resolve().parents[2]
CONFINE_PY = ROOT / "kernel_gym" / "sandbox" / "confine" / "__init__.py"

pytestmark = pytest.mark.skipif(sys.platform != "linux" or os.uname().machine not in ("x86_64", "aarch64"),
                                reason="Linux seccomp tables for x86_64 and aarch64")

X86 = os.uname().machine == "x86_64"
SYS = {"sched_setattr": 314 if X86 else 274, "ioprio_set": 251 if X86 else 30, "migrate_pages": 256 if X86 else 238,
       "move_pages": 279 if X86 else 239, "get_robust_list": 274 if X86 else 100, "kill": 62 if X86 else 129,
       "sched_setaffinity": 203 if X86 else 122}

VICTIM = textwrap.dedent("""
    import sys, threading, time
    for _ in range(2):
        threading.Thread(target=lambda: time.sleep(3600), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()
""")

ATTACKER = textwrap.dedent("""
    import ctypes, importlib.util, json, os, resource, socket, sys, threading
    cfg = json.loads(sys.argv[1])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    spec = importlib.util.spec_from_file_location("confine", cfg["confine_py"])  # the package, without kernel_gym
    confine = importlib.util.module_from_spec(spec)
    sys.modules["confine"] = confine  # (its modules import each other relatively)
    spec.loader.exec_module(confine)
    applied = confine.apply(cfg["workdir"], **cfg["confine"]) if cfg["confine"] is not None else []
    V, me, SYS = cfg["victim"], os.getpid(), cfg["sys"]

    def raw(number, *args):
        result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
        if result == -1:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        return result

    class SchedAttr(ctypes.Structure):
        _fields_ = [(n, t) for n, t in (("size", ctypes.c_uint32), ("policy", ctypes.c_uint32),
                    ("flags", ctypes.c_uint64), ("nice", ctypes.c_int32), ("priority", ctypes.c_uint32),
                    ("runtime", ctypes.c_uint64), ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64))]

    def setattr_(pid, **fields):
        return raw(SYS["sched_setattr"], pid, ctypes.byref(SchedAttr(size=48, **fields)), 0)

    head, length = ctypes.c_void_p(), ctypes.c_size_t()
    mask = (ctypes.c_ulong * 16)(*([~0 & (2**64 - 1)] + [0] * 15))
    one_cpu = {min(os.sched_getaffinity(0))}
    all_cpus = os.sched_getaffinity(0)
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    IDLE_IO, BE_IO = 3 << 13, (2 << 13) | 4
    ATTACKS = {  # each aimed at the victim (its own process group, as a runner's is)
        "setpriority": lambda: os.setpriority(os.PRIO_PROCESS, V, 19),
        "setpriority_pgrp": lambda: os.setpriority(os.PRIO_PGRP, V, 19),
        "sched_setaffinity": lambda: os.sched_setaffinity(V, one_cpu),
        "sched_setaffinity_high_word": lambda: raw(SYS["sched_setaffinity"], V | (1 << 32), 8,
                                                   ctypes.byref(ctypes.c_ulong(1 << min(one_cpu)))),
        "sched_setscheduler": lambda: os.sched_setscheduler(V, os.SCHED_IDLE, os.sched_param(0)),
        "sched_setparam": lambda: os.sched_setparam(V, os.sched_param(0)),
        "sched_deadline": lambda: setattr_(V, policy=6, runtime=100_000, deadline=100_000_000, period=100_000_000),
        "prlimit": lambda: resource.prlimit(V, resource.RLIMIT_NOFILE, (64, nofile[1])),
        "ioprio_set": lambda: raw(SYS["ioprio_set"], 1, V, IDLE_IO),
        "ioprio_set_pgrp": lambda: raw(SYS["ioprio_set"], 2, V, IDLE_IO),
        "migrate_pages": lambda: raw(SYS["migrate_pages"], V, 64, ctypes.byref(mask), ctypes.byref(mask)),
        "move_pages": lambda: raw(SYS["move_pages"], V, 0, None, None, None, 0),
        "get_robust_list": lambda: raw(SYS["get_robust_list"], V, ctypes.byref(head), ctypes.byref(length)),
        "kill_all": lambda: raw(SYS["kill"], -1, 0),  # signal 0: a permission check, nothing is sent
    }
    OWN = {  # the same calls on the caller itself, by 0 and by its pid
        "setpriority": lambda p: os.setpriority(os.PRIO_PROCESS, p, 1),
        "sched_setaffinity": lambda p: os.sched_setaffinity(p, all_cpus),
        "sched_setscheduler": lambda p: os.sched_setscheduler(p, os.SCHED_BATCH, os.sched_param(0)),
        "sched_setparam": lambda p: os.sched_setparam(p, os.sched_param(0)),
        "sched_setattr": lambda p: setattr_(p, policy=0, nice=2),
        "prlimit": lambda p: resource.prlimit(p, resource.RLIMIT_NOFILE, nofile),
        "ioprio_set": lambda p: raw(SYS["ioprio_set"], 1, p, BE_IO),
        "move_pages": lambda p: raw(SYS["move_pages"], p, 0, None, None, None, 0),
        "get_robust_list": lambda p: raw(SYS["get_robust_list"], p, ctypes.byref(head), ctypes.byref(length)),
        "kill": lambda p: os.kill(p, 0),
    }

    def attempt(fn, *args):
        try:
            fn(*args)
            return None
        except OSError as exc:
            return exc.errno

    out = {"applied": applied, "attacks": {}, "own": {}, "sockets": {}}
    for name in cfg["attacks"]:
        out["attacks"][name] = attempt(ATTACKS[name])
    for name, fn in OWN.items():
        out["own"][name] = [attempt(fn, 0), attempt(fn, me)]
    box = {}

    def in_a_thread():  # a thread names itself by 0; by its own tid it is "another pid" to the filter
        box["zero"] = attempt(os.sched_setaffinity, 0, all_cpus)
        box["tid"] = attempt(os.sched_setaffinity, threading.get_native_id(), all_cpus)

    t = threading.Thread(target=in_a_thread)
    t.start()
    t.join()
    out["thread"] = box

    def connect(address):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(address)
            s.sendall(b"hello")
        finally:
            s.close()

    for name, address in (("pathname", cfg["pathname"]), ("abstract", "\\0" + cfg["abstract"])):
        out["sockets"][name] = attempt(connect, address) if address else "skipped"

    def pair():
        a, b = socket.socketpair()
        a.sendall(b"x")
        assert b.recv(1) == b"x"

    out["sockets"]["socketpair"] = attempt(pair)
    print(json.dumps(out))
""")

ATTACKS = ["setpriority", "setpriority_pgrp", "sched_setaffinity", "sched_setaffinity_high_word", "sched_setscheduler",
           "sched_setparam", "sched_deadline", "prlimit", "ioprio_set", "ioprio_set_pgrp", "migrate_pages",
           "move_pages", "get_robust_list", "kill_all"]
# Unconfined, these need only reach the kernel (any answer but EPERM): page moves on a machine without NUMA nodes.
REACH_ONLY = {"migrate_pages", "move_pages"}
CONFIGS = {"none": None, "seccomp": {"uid": None, "landlock": False}, "all": {"uid": None, "proc": True}}


@pytest.fixture
def victim():
    proc = subprocess.Popen([sys.executable, "-c", VICTIM], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own process group, as a runner's
    assert proc.stdout.readline().strip() == "ready"
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def listeners():
    """A listening pathname socket (as the judge's) and an abstract-namespace one, made by the test."""
    top = Path(tempfile.mkdtemp(prefix="kg_foreign_"))
    top.chmod(0o755)
    (top / "job").mkdir()
    path = top / "judge.sock"
    named = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    named.bind(str(path))
    named.listen(8)
    abstract_name = f"kernel-gym-test-{uuid.uuid4().hex}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + abstract_name)
    abstract.listen(8)
    yield top, str(path), abstract_name
    named.close()
    abstract.close()
    import shutil

    shutil.rmtree(top, ignore_errors=True)


def run_attacker(victim_pid: int, listeners, pieces: dict | None, attacks=ATTACKS) -> dict:
    top, path, abstract = listeners
    cfg = {"confine_py": str(CONFINE_PY), "workdir": str(top / "job"), "confine": pieces, "victim": victim_pid,
           "sys": SYS, "attacks": list(attacks), "pathname": path, "abstract": abstract}
    out = subprocess.run([sys.executable, "-c", ATTACKER, json.dumps(cfg)], capture_output=True, text=True,
                         timeout=60, cwd=top / "job")
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _require(report: dict, *pieces: str) -> None:
    missing = [p for p in pieces if p not in report["applied"]]
    if missing:
        pytest.skip(f"{missing} not in force here (applied: {report['applied']}; kernel {os.uname().release}, "
                    f"Landlock ABI {landlock.landlock_abi()})")


@pytest.mark.timeout(120)
def test_every_attack_works_unconfined(victim, listeners):
    """The control: each call reaches the kernel and (as root, or on one's own processes) changes the victim."""
    baseline = ref_guard.snapshot(victim.pid)
    report = run_attacker(victim.pid, listeners, None, [a for a in ATTACKS if a != "sched_deadline"])
    # SCHED_DEADLINE on a victim of its own: the kernel refuses it to a task pinned to fewer CPUs than its root domain
    fresh = subprocess.Popen([sys.executable, "-c", VICTIM], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        assert fresh.stdout.readline().strip() == "ready"
        report["attacks"].update(run_attacker(fresh.pid, listeners, None, ["sched_deadline"])["attacks"])
        deadline = ref_guard.snapshot(fresh.pid)["threads"][str(fresh.pid)].get("policy")
    finally:
        fresh.kill()
        fresh.wait()
    for name, err in report["attacks"].items():
        if name in REACH_ONLY:
            assert err != errno.EPERM, (name, err)
        elif err is not None:
            pytest.skip(f"{name} fails here even unconfined ({os.strerror(err)}; euid {os.geteuid()})")
    assert deadline == "SCHED_DEADLINE"
    why = ref_guard.changed(victim.pid, baseline)
    expected = ["nice: 0 -> 19", "policy: SCHED_OTHER -> SCHED_IDLE", "rlimits.RLIMIT_NOFILE", "ioprio"]
    expected += ["affinity:"] if len(os.sched_getaffinity(0)) > 1 else []  # (one CPU: nothing to narrow)
    for change in expected:
        assert change in (why or ""), (change, why)
    assert report["sockets"] == {"pathname": None, "abstract": None, "socketpair": None}, report["sockets"]
    assert report["thread"] == {"zero": None, "tid": None}, report["thread"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("config", ["seccomp", "all"])
def test_a_confined_process_leaves_other_processes_alone(config, victim, listeners):
    """Seccomp alone stops each call on another pid with EPERM (Landlock does not hook scheduling calls); the victim
    reads unchanged. The same calls on the caller itself (0, its own pid) still work."""
    baseline = ref_guard.snapshot(victim.pid)
    report = run_attacker(victim.pid, listeners, CONFIGS[config])
    _require(report, "seccomp")
    assert report["attacks"] == dict.fromkeys(ATTACKS, errno.EPERM), report["attacks"]
    assert ref_guard.changed(victim.pid, baseline) is None
    assert report["own"] == {name: [None, None] for name in report["own"]}, report["own"]
    # a thread on itself: by 0 it works; by its own tid the filter cannot tell it from another pid (documented)
    assert report["thread"] == {"zero": None, "tid": errno.EPERM}, report["thread"]


@pytest.mark.timeout(120)
def test_seccomp_alone_keeps_unix_sockets_out_of_reach(victim, listeners):
    """No new AF_UNIX socket after confinement: neither a pathname socket (the judge's, which Landlock ABI < 9 does
    not cover: connect() needs only the file's mode, and a root runner passes any) nor an abstract one is reached.
    socketpair() stays (a runner's own channel is an inherited socketpair end)."""
    report = run_attacker(victim.pid, listeners, CONFIGS["seccomp"], attacks=[])
    _require(report, "seccomp")
    assert report["sockets"] == {"pathname": errno.EPERM, "abstract": errno.EPERM, "socketpair": None}, report


@pytest.mark.timeout(120)
def test_landlock_scope_alone_keeps_the_abstract_namespace_out_of_reach(victim, listeners):
    """With seccomp off, Landlock's scope (ABI 6, Linux 6.12) still denies connecting to an abstract socket made
    outside the runner's domain."""
    report = run_attacker(victim.pid, listeners, {"uid": None, "seccomp": False}, attacks=[])
    _require(report, "landlock_scope")
    assert report["sockets"]["abstract"] == errno.EPERM, report
    assert report["sockets"]["socketpair"] is None, report


@pytest.mark.timeout(120)
def test_full_confinement_keeps_unix_sockets_out_of_reach(victim, listeners):
    report = run_attacker(victim.pid, listeners, CONFIGS["all"], attacks=[])
    _require(report, "seccomp")
    assert report["sockets"] == {"pathname": errno.EPERM, "abstract": errno.EPERM, "socketpair": None}, report


def test_the_pid_rules_follow_the_kernel_headers():
    """The numbers of `_OWN_PID_ONLY` and kill against the UAPI headers, where this machine has them."""
    import re

    tables = []
    for path, pattern, column in (("/usr/include/x86_64-linux-gnu/asm/unistd_64.h", r"#define __NR_(\w+)\s+(\d+)", 0),
                                  ("/usr/include/asm-generic/unistd.h", r"#define __NR(?:3264)?_(\w+)\s+(\d+)", 1)):
        if os.path.exists(path):
            tables.append((column, {m.group(1): int(m.group(2)) for m in re.finditer(pattern, Path(path).read_text())}))
    if not tables:
        pytest.skip("no kernel UAPI headers here")
    for column, table in tables:
        for name, (numbers, _, _) in seccomp._OWN_PID_ONLY.items():
            assert numbers[column] == table[name], (name, column)
        assert seccomp._KILL["x86_64" if column == 0 else "aarch64"] == table["kill"]


def test_allow_lifts_a_pid_rule_and_the_unix_socket_rule():
    plain = seccomp.seccomp_program("x86_64")
    lifted = seccomp.seccomp_program("x86_64", allow=["sched_setaffinity", seccomp.UNIX_SOCKETS, seccomp.KILL_ALL])
    assert len(lifted) < len(plain)
    assert "sched_setaffinity(other pid)" not in seccomp.denied_syscalls(allow=["sched_setaffinity"])
    assert seccomp.UNIX_SOCKETS not in seccomp.denied_syscalls(allow=[seccomp.UNIX_SOCKETS])
    assert seccomp.UNIX_SOCKETS not in seccomp.denied_syscalls(network=True)
    # the pid baked into the filter is the caller's own unless given
    assert any(k == os.getpid() for _, _, _, k in plain)
    assert any(k == 4242 for _, _, _, k in seccomp.seccomp_program("aarch64", pid=4242))


# A genuine ReLU whose forward() goes for the reference runner of its slot: the processes its parent (the fork
# server) started, found through /proc where the runner may still read it, and the pid the test planted (standing in
# for a scan of the pids near its own: a runner on cpu may not read other processes' /proc files). Each act is
# written down; the answer stays right, so only the reference's state tells whether it worked.
SLOWER_HEADER = """import ctypes, json, os, resource


def _targets(planted):
    pids = set()
    try:
        with open(planted) as f:
            pids.add(int(f.read()))
    except (OSError, ValueError):
        pass
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{name}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getppid():
                        pids.add(int(name))
            except (OSError, ValueError, IndexError):
                pass
    return sorted(pids)


class _Attr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("policy", ctypes.c_uint32), ("flags", ctypes.c_uint64),
                ("nice", ctypes.c_int32), ("priority", ctypes.c_uint32), ("runtime", ctypes.c_uint64),
                ("deadline", ctypes.c_uint64), ("period", ctypes.c_uint64)]


def _slow_down(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _Attr(size=48, policy=6, runtime=100_000, deadline=100_000_000, period=100_000_000)

    def deadline():
        if libc.syscall(ctypes.c_long(%(sched_setattr)d), ctypes.c_long(pid), ctypes.byref(attr), ctypes.c_long(0)):
            raise OSError(ctypes.get_errno(), "sched_setattr")

    acts = {"sched_deadline": deadline,
            "setpriority": lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
            "sched_setaffinity": lambda: os.sched_setaffinity(pid, {min(os.sched_getaffinity(0))}),
            "sched_setscheduler": lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
            "prlimit": lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (64, 64))}
    done = {}
    for name, act in acts.items():
        try:
            act()
            done[name] = None
        except OSError as exc:
            done[name] = exc.errno
    return done


def _attack(planted, log):
    report = {str(pid): _slow_down(pid) for pid in _targets(planted)}
    with open(log, "a") as f:
        f.write(json.dumps({"me": os.getpid(), "uid": os.geteuid(), "targets": report}) + "\\n")
"""


@pytest.fixture(params=["everything", "seccomp_alone"])
def private_pool(request, monkeypatch):
    """A pool of its own: without the defense, this attack leaves its reference runner slowed for every later job.
    `seccomp_alone`: its runners keep the judge's uid (root here), so only the seccomp rules stand in the way (a
    runner of a uid of its own also meets the kernel's own refusal: no CAP_SYS_NICE, another uid)."""
    from kernel_gym.judge.pool import WorkerPool

    if request.param == "seccomp_alone":
        monkeypatch.setenv("KERNEL_GYM_RUNNER_UID", "none")
    pool = WorkerPool("cpu", 1)
    pool.warm_up()
    yield pool
    pool.close()


@pytest.mark.timeout(600)
def test_a_candidate_cannot_slow_the_reference_runner(private_pool, relu_code, runner_scratch):
    from kernel_gym.eval.job import EvalConfig, job_for
    from kernel_gym.eval.result import Outcome
    from kernel_gym.tasks import load_task

    ref_pid = private_pool._all[0].ref.pid
    planted, log = runner_scratch / "reference_pid", runner_scratch / "attack.jsonl"
    planted.write_text(str(ref_pid))
    log.unlink(missing_ok=True)
    baseline = ref_guard.snapshot(ref_pid)
    code = relu_code(header=SLOWER_HEADER % {"sched_setattr": SYS["sched_setattr"]},
                     extra=f"if self.calls in (1, 2):\n    _attack({str(planted)!r}, {str(log)!r})")
    result = private_pool.evaluate(job_for(load_task("level1/relu"), code, backend="triton",
                                           config=EvalConfig(device="cpu", checks="none", compile_timeout_s=120,
                                                             run_timeout_s=120)))
    assert result.outcome is Outcome.CORRECT, result.message
    attempts = [json.loads(line) for line in log.read_text().splitlines()]
    assert attempts and all(str(ref_pid) in a["targets"] for a in attempts), attempts
    if os.environ.get("KERNEL_GYM_RUNNER_UID") == "none":
        assert all(a["uid"] == os.geteuid() for a in attempts), attempts
    assert private_pool._all[0].ref.pid == ref_pid  # (the same reference runner, still serving)
    assert ref_guard.changed(ref_pid, baseline) is None
    for attempt in attempts:
        assert attempt["targets"][str(ref_pid)] == dict.fromkeys(
            ["sched_deadline", "setpriority", "sched_setaffinity", "sched_setscheduler", "prlimit"], errno.EPERM), attempt
