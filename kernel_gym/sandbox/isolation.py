"""Least privilege for every process the judge starts: each runner (candidate, reference), build process and compile
check runs as an unprivileged uid of its own, with no capabilities, and the judge records what is in force.

Process side, one module a step: `uids` (the uid and groups a process drops to), `mount_plan` and `mount_ns` (a
mount namespace that keeps what it needs reachable by that uid and hides the judge's home: `mount_ns.prepare`, at the
process's start), `confine.apply` (the drop itself, with the rest of the confinement; called from `limits.confine`).

Judge side, here: `preflight()` starts one probe process that does what a runner does (prepare, drop) and logs a
WARNING when runners would keep root or capabilities; `observe(pid)` reads what is in force for a runner from /proc
(its uid, CapEff, NoNewPrivs, seccomp, namespaces, session: facts the runner cannot forge); `record` keeps the last
seen per role for `judge status` (`summary()`); a build process reports itself (`self_report`, kept by `note`);
`seal(tree)` makes a published build root's and read-only.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernel_gym.sandbox.uids import UID_VARIABLE, uid_setting

log = logging.getLogger(__name__)


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
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from kernel_gym.sandbox import confine, limits, mount_ns, uids
pieces = mount_ns.prepare("candidate")
pieces += mount_ns.job_space(limits.jobs_folder(Path(sys.argv[2])))
reasons = dict(mount_ns.prepared()["reasons"])
uid = uids.target_uid("candidate")
if uid is not None:
    pieces += confine.apply(sys.argv[2], uid=uid, landlock=False, seccomp=False, reasons=reasons)
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
print(json.dumps({"pieces": pieces, "reasons": reasons, "uid": os.getuid(), "shadows": mount_ns.prepared()["shadows"],
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
