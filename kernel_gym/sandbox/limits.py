"""What a worker process may do, enforced where the OS allows. Applied by the worker to itself at start-up,
while it is still single-threaded and before any candidate code exists.

| limit | how | where |
|---|---|---|
| dies with its parent | prctl(PR_SET_PDEATHSIG, SIGKILL) | Linux |
| adopts orphans, so everything a candidate spawns can be killed | prctl(PR_SET_CHILD_SUBREAPER) | Linux |
| no network | unshare(CLONE_NEWNET): a fresh namespace with only a down loopback | Linux, as root |
| no core dumps, bounded open files and processes | setrlimit CORE=0, NOFILE, NPROC | POSIX (NPROC is not enforced for root) |
| bounded address space | setrlimit AS | cpu workers only (CUDA reserves huge virtual ranges) |
| scrubbed environment | the parent passes an allowlist of variables | everywhere |
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import shutil
import signal
from pathlib import Path

from kernel_gym.paths import cache_dir

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWNET = 0x40000000

_PASS_PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "NVSHMEM_", "TORCH_SYMM_MEM_", "LD_LIBRARY_PATH", "PATH", "LANG", "LC_",
                  "TRITON_", "CC", "CXX", "KERNEL_GYM_CACHE", "KERNEL_GYM_RUNNER_", "KERNEL_GYM_CONFINE_PROC",
                  "TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "TZ")


def cuda_home() -> str | None:
    """The CUDA root: $CUDA_HOME, or the folder above the real nvcc (the one on PATH may be a wrapper script)."""
    if os.environ.get("CUDA_HOME"):
        return os.environ["CUDA_HOME"]
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    path = Path(nvcc).resolve()
    try:
        if path.stat().st_size < 4096:
            m = re.search(r"(\S+)/bin/nvcc", path.read_text(errors="replace"))
            if m and Path(m.group(1), "bin", "nvcc").exists():
                return m.group(1)
    except OSError:
        pass
    return str(path.parent.parent)


def worker_environment(workdir: Path, device: str, gpu: int | None, pythonpath: str) -> dict[str, str]:
    """An allowlist of the parent's variables plus our own; secrets (API keys, tokens) never pass."""
    env = {k: v for k, v in os.environ.items() if k.startswith(_PASS_PREFIXES)}
    inherited = os.environ.get("PYTHONPATH")
    pythonpath = os.pathsep.join([pythonpath, inherited]) if inherited else pythonpath
    env.update(HOME=str(workdir), TMPDIR=str(workdir), PYTHONPATH=pythonpath, PYTHONDONTWRITEBYTECODE="1",
               PYTHONUNBUFFERED="1", TRITON_CACHE_DIR=str(workdir / "triton"), OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"))
    home = cuda_home()
    if home:
        env["CUDA_HOME"] = home
    env.setdefault("KERNEL_GYM_CACHE", str(Path.home() / ".cache" / "kernel_gym"))
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env.pop("TRITON_INTERPRET", None)
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu)
    return env


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def die_with_parent() -> bool:
    """This process is killed when its parent ends (Linux); False where that cannot be set."""
    libc = _libc()
    return bool(libc is not None and hasattr(libc, "prctl") and libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0)


def apply(device: str, memory_limit_gb: float | None, max_open_files: int = 4096, max_processes: int = 512) -> list[str]:
    """Apply every limit this OS allows to the current process; returns the names of those in force."""
    applied = []
    libc = _libc()
    if libc is not None and hasattr(libc, "prctl"):
        if die_with_parent():
            applied.append("pdeathsig")
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
            applied.append("subreaper")
        if hasattr(libc, "unshare") and os.environ.get("KERNEL_GYM_NETWORK") != "1" and libc.unshare(CLONE_NEWNET) == 0:
            applied.append("no_network")
    for name, limit in (("RLIMIT_CORE", 0), ("RLIMIT_NOFILE", max_open_files), ("RLIMIT_NPROC", max_processes)):
        try:
            soft, hard = resource.getrlimit(getattr(resource, name))
            cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
            resource.setrlimit(getattr(resource, name), (cap, hard if hard != resource.RLIM_INFINITY else cap))
            applied.append(name.lower())
        except (ValueError, OSError, AttributeError):
            pass
    if device == "cpu" and memory_limit_gb:
        try:
            limit = int(memory_limit_gb * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            applied.append("rlimit_as")
        except (ValueError, OSError):
            pass
    return applied


def kill_descendants(root_pid: int) -> int:
    """SIGKILL every process below root_pid (orphans re-parent to the subreaper worker, so they are found)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    killed, stack = 0, list(children.get(root_pid, []))
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed


# What a process may write besides its own folder, by role: the build caches of its side ($KERNEL_GYM_CACHE/...).
# A candidate's runner writes none: its load_inline builds are the judge's build service's (judge/builds.py), whose
# build process writes the header caches and its staging folder; the reference's runner builds C references.
CACHE_DIRS = {"candidate": (), "builder": ("pch", "fast_build"), "reference": ("c_reference",)}


def confine(root: Path, device: str, role: str) -> list[str]:
    """The runner's confinement (`kernel_gym.sandbox.confine`): writes only beneath its root folder, its side's build
    caches, `$KERNEL_GYM_RUNNER_WRITABLE` (os.pathsep-separated, an operator's or a test's scratch folder) and, on
    cuda, /dev/shm (CUDA IPC's ref-counter files); seccomp; Landlock's network and scope rights. The uid is dropped
    (to $KERNEL_GYM_RUNNER_UID, else 65534) only where Landlock is missing, or when $KERNEL_GYM_RUNNER_UID asks for
    it. A candidate's runner on cpu also may not read other processes' /proc files (`landlock_proc`: their
    environments hold a client's API keys); on cuda only with KERNEL_GYM_CONFINE_PROC=1 until it is measured there
    (CUDA's compilers run as the runner's children); =0 turns it off. Returns the names of the pieces in force."""
    from kernel_gym.sandbox import confine as confinement

    cache = cache_dir()
    writable = [cache / d for d in CACHE_DIRS.get(role, ())]
    for path in writable:
        path.mkdir(parents=True, exist_ok=True)
    writable += [Path(p) for p in os.environ.get("KERNEL_GYM_RUNNER_WRITABLE", "").split(os.pathsep) if p]
    if device == "cuda" and Path("/dev/shm").is_dir():
        writable.append(Path("/dev/shm"))
    uid = os.environ.get(confinement.UID_VARIABLE) or (None if confinement.landlock_abi() >= 1 else "auto")
    if uid not in (None, "none"):
        root.chmod(0o711)
    return confinement.apply(root, writable=writable, uid=uid, proc=confine_proc(device, role))


def confine_proc(device: str, role: str) -> bool:
    """Whether a runner gets `landlock_proc` (see `confine`)."""
    flag = os.environ.get("KERNEL_GYM_CONFINE_PROC", "")
    if flag in ("0", "1"):
        return flag == "1" and role == "candidate"
    return role == "candidate" and device == "cpu"
