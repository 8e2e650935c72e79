"""What a worker process may do, enforced where the OS allows. Applied by the worker to itself at start-up,
while it is still single-threaded and before any candidate code exists.

| limit | how | where |
|---|---|---|
| dies with its parent | prctl(PR_SET_PDEATHSIG, SIGKILL) | Linux |
| adopts orphans, so everything a candidate spawns can be killed | prctl(PR_SET_CHILD_SUBREAPER) | Linux |
| no network | unshare(CLONE_NEWNET): a fresh namespace with only a down loopback | Linux, as root |
| no core dumps, bounded open files and processes | setrlimit CORE=0, NOFILE, NPROC | POSIX (NPROC is not enforced for root) |
| a candidate's runner is the out-of-memory killer's first pick | /proc/self/oom_score_adj = 1000 | Linux |
| no file over 1 GiB (its log included: a candidate printing in a loop) | setrlimit FSIZE (`KERNEL_GYM_RUNNER_FILE_GB`) | POSIX |
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


RUNNER_USER = "kernel-gym-runner"  # a runner's LOGNAME and USER
# Names of variables that hold secrets (judge/client.py keeps them out of the judge too): never passed, whatever the
# prefix (a CUDA_..._KEY or a TRITON_..._TOKEN would pass the allowlist).
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)


def worker_environment(workdir: Path, device: str, gpu: int | None, pythonpath: str) -> dict[str, str]:
    """An allowlist of the parent's variables plus our own; secrets (API keys, tokens) never pass. Python's import
    path never starts with the working directory (PYTHONSAFEPATH: a runner's folder, which a candidate writes, would
    otherwise come first on the path of every later job of that runner)."""
    env = {k: v for k, v in os.environ.items() if k.startswith(_PASS_PREFIXES) and not _SECRET_NAME.search(k)}
    inherited = os.environ.get("PYTHONPATH")
    pythonpath = os.pathsep.join([pythonpath, inherited]) if inherited else pythonpath
    env.update(HOME=str(workdir), TMPDIR=str(workdir), PYTHONPATH=pythonpath, PYTHONDONTWRITEBYTECODE="1",
               PYTHONUNBUFFERED="1", PYTHONSAFEPATH="1", TRITON_CACHE_DIR=str(workdir / "triton"),
               OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
               # a runner's uid of its own has no passwd entry: libraries that ask who runs them (getpass.getuser,
               # torch's default cache folders) read these instead of failing (measured: Triton + torch.profiler under
               # a dropped uid on an H100, KeyError 'getpwuid(): uid not found')
               LOGNAME=RUNNER_USER, USER=RUNNER_USER,
               # Helion autotunes a kernel given no config (minutes of benchmarking inside the first call): a
               # solution names its config (config=, one of configs=, or autotune_effort="none") or gets Helion's error
               HELION_DISALLOW_AUTOTUNING="1")
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


def job_environment(folder: Path) -> dict[str, str]:
    """Where a runner's libraries keep their caches and scratch files during one job: beneath the job's own folder
    (runner/session.py sets them at the job's start, and the runner works in that folder), which is deleted at its
    end. A runner's own folder outlives its jobs and its candidates may write it: a Triton or Inductor cache, a
    HOME or TMPDIR there would hand the next job of that runner whatever a candidate planted (a compiled kernel
    under the key of the next job's, a module on the import path)."""
    return {"HOME": str(folder), "TMPDIR": str(folder), "TRITON_CACHE_DIR": str(folder / "triton"),
            "TORCH_EXTENSIONS_DIR": str(folder / "extensions"), "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
            "XDG_CACHE_HOME": str(folder / ".cache"), "HELION_CACHE_DIR": str(folder / "helion"),
            # CuTe DSL's compiled host functions and IR (else $TMPDIR/<user>/cutlass_python_cache, its dumps the cwd),
            # TileLang's kernels (else ~/.tilelang/cache) and TVM-FFI's builds (else ~/.cache/tvm-ffi)
            "CUTE_DSL_CACHE_DIR": str(folder / "cute_dsl"), "CUTE_DSL_DUMP_DIR": str(folder / "cute_dsl_dump"),
            "TILELANG_CACHE_DIR": str(folder / "tilelang"), "TVM_FFI_CACHE_DIR": str(folder / "tvm_ffi")}


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def die_with_parent() -> bool:
    """This process is killed when its parent ends (Linux); False where that cannot be set."""
    libc = _libc()
    return bool(libc is not None and hasattr(libc, "prctl") and libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0)


def _first_to_go() -> bool:
    """A candidate's runner is the first process the kernel's out-of-memory killer picks (`oom_score_adj` 1000, which
    any process may raise for itself): a job that exhausts the machine's memory loses its own runner, never the judge
    every env shares nor another job's reference."""
    try:
        Path("/proc/self/oom_score_adj").write_text("1000")
        return True
    except OSError:
        return False


def gib_setting(variable: str, default_gib: float) -> int:
    """A size in bytes set in GiB by $`variable` (else, or when it is no number, `default_gib`), at least 1 MiB."""
    try:
        gib = float(os.environ.get(variable) or default_gib)
    except ValueError:
        gib = default_gib
    return max(1 << 20, int(gib * (1 << 30)))


def largest_file() -> int:
    """The largest file a runner (and what it starts) may write, in bytes: $KERNEL_GYM_RUNNER_FILE_GB, else 1 GiB.
    A write past it fails (EFBIG; SIGXFSZ kills a writer that does not ignore it, as Python does): no job fills the
    machine's disk with one file, its log included."""
    return gib_setting("KERNEL_GYM_RUNNER_FILE_GB", 1.0)


def jobs_folder(root: Path) -> Path:
    """Where a runner's jobs write, beneath its root folder: every job's own folder (`job_environment`), the only
    tree its confinement lets it write, of bounded size as root (`mount_ns.job_space`)."""
    return root / "work"


def apply(device: str, memory_limit_gb: float | None, max_open_files: int = 4096, max_processes: int = 512,
          role: str = "candidate") -> list[str]:
    """Apply every limit this OS allows to the current process; returns the names of those in force."""
    applied = []
    if role == "candidate" and _first_to_go():
        applied.append("oom_first")
    libc = _libc()
    if libc is not None and hasattr(libc, "prctl"):
        if die_with_parent():
            applied.append("pdeathsig")
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0:
            applied.append("subreaper")
        if hasattr(libc, "unshare") and os.environ.get("KERNEL_GYM_NETWORK") != "1" and libc.unshare(CLONE_NEWNET) == 0:
            applied.append("no_network")
    for name, limit in (("RLIMIT_CORE", 0), ("RLIMIT_NOFILE", max_open_files), ("RLIMIT_NPROC", max_processes),
                        ("RLIMIT_FSIZE", largest_file())):
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
# build process writes only its staging folder (the judge publishes from it); the reference's runner builds C
# references.
CACHE_DIRS = {"candidate": (), "builder": (), "reference": ("c_reference",)}
# What a read-confined role may read of the caches: a build process, the PCHs the judge published (judge/fast_build.py;
# it builds a missing one in its staging folder: its compilers run with the candidate's flags, which may name any
# output file it can write, so it writes no cache).
CACHE_READS = {"builder": ("pch",)}
# Roles that compile a candidate's source (a build process, the judge's compile check on cpu): they also read only the
# toolchain, the Python install and their own folders (`landlock_read`; kernel_gym/sandbox/toolchain.py), so no
# `#include` or `-I` reaches /proc, a home folder or another job's files.
READ_CONFINED = frozenset({"builder", "check"})


def confine(root: Path, device: str, role: str, workdir: Path | None = None) -> list[str]:
    """The runner's confinement (`kernel_gym.sandbox.confine`): writes only beneath `workdir` (default: its root
    folder; a runner's is its jobs' folder, `jobs_folder`), its side's build caches, `$KERNEL_GYM_RUNNER_WRITABLE`
    (os.pathsep-separated, an operator's or a test's scratch folder) and, on cuda, /dev/shm (CUDA IPC's; the
    machine's unless $KERNEL_GYM_RUNNER_SHM_GB opts in: `mount_ns.shm_bytes`); seccomp; Landlock's network and scope
    rights. As root it always
    drops to an unprivileged uid with no capabilities (`kernel_gym.sandbox.uids`: one of its own unless
    $KERNEL_GYM_RUNNER_UID says otherwise; the roles that write a shared cache join its group, umask 002), after
    `mount_ns.prepare` made what it needs reachable (done at the process's start by runners and build processes;
    here for any other caller, which must then still be single-threaded). A candidate's runner on cpu also may not
    read other processes' /proc files (`landlock_proc`: their environments hold a client's API keys); on cuda only
    with KERNEL_GYM_CONFINE_PROC=1 until it is measured there (CUDA's compilers run as the runner's children); =0
    turns it off. Returns the names of the pieces in force."""
    from kernel_gym.sandbox import confine as confinement
    from kernel_gym.sandbox import mount_ns, uids

    early = mount_ns.prepare(role)  # [] where the process's start did it
    cache = cache_dir()
    writable = [cache / d for d in CACHE_DIRS.get(role, ())]
    for path in writable:
        path.mkdir(parents=True, exist_ok=True)
    writable += [Path(p) for p in os.environ.get("KERNEL_GYM_RUNNER_WRITABLE", "").split(os.pathsep) if p]
    if device == "cuda" and Path("/dev/shm").is_dir():
        writable.append(Path("/dev/shm"))
    uid = uids.target_uid(role) if os.geteuid() == 0 else None  # (not root: its uid is all it has)
    groups = uids.groups(role) if uid is not None else []
    if uid is not None:
        root.chmod(0o711)
        if groups:
            os.umask(0o002)  # what it adds to a shared cache stays writable by the other writers (its group)
    readable = None
    if role in READ_CONFINED:
        from kernel_gym.sandbox import toolchain

        readable = toolchain.read_grants(cache / d for d in CACHE_READS.get(role, ()))
    return early + confinement.apply(workdir or root, writable=writable, uid=uid, groups=groups,
                                     proc=confine_proc(device, role), readable=readable)


def confine_proc(device: str, role: str) -> bool:
    """Whether a runner gets `landlock_proc` (see `confine`)."""
    flag = os.environ.get("KERNEL_GYM_CONFINE_PROC", "")
    if flag in ("0", "1"):
        return flag == "1" and role == "candidate"
    return role == "candidate" and device == "cpu"
