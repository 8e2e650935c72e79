"""Compilers run on a candidate's source by the judge's side (the cpu backend's compile checks: nvcc, NVRTC; the build
processes of `judge/builds.py`): what they may read, the environment they get, and how a compile check is started.

A source decides what its compiler opens: `#include "/proc/self/environ"`, `#include "/root/.netrc"`, `-I/home`. A
compiler started by the judge with the judge's environment and rights would quote those files back in its errors, and
on cpu the judge is the trainer's own process (API keys in its environment). So a compiling process gets:
- the build processes' allow-listed environment (`limits.worker_environment`: no variable named like a secret), its
  own folder as HOME and TMPDIR, no GPU;
- `limits.confine(folder, device, "check")` (or `"builder"`), whose Landlock layers let it write only beneath its
  folder and read (and execute) only beneath `read_grants()`: the system toolchain (/usr and the root-level links
  into it, the loader's cache), CUDA's root and the compilers on PATH, the Python install (prefixes, stdlib,
  site-packages, the import path less kernel_gym's own checkout) and kernel_gym itself. No /proc, no home folder,
  no /tmp, no other job's folder: an include of any of them is "cannot open source file";
- a log in which a diagnostic located in a file outside its folder and the toolchain is withheld (`redact`: defense in
  depth where Landlock is missing or a file is readable after all); the source's own errors keep their lines.

`run(argv, folder, timeout_s)` starts `argv` (nvcc) that way: `python -m kernel_gym.sandbox.toolchain FOLDER -- ARGV`
confines itself, then execs ARGV, in a session of its own that is killed whole at the limit. NVRTC runs in a Python
process of its own (`judge/compile_check.py`), which confines itself the same way after its imports.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # kernel_gym/
# The system's toolchain: compilers, binutils, headers, libraries (and the root-level links merged-/usr systems have).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives",
                "/dev/null", "/dev/zero", "/dev/full", "/dev/urandom", "/dev/random")
TOOLS = ("nvcc", "c++", "g++", "gcc", "cc", "ninja", "ptxas", "cuobjdump")


def _prefix(executable: str | None) -> Path | None:
    """The install prefix of a program on PATH (the folder above its bin/), its own folder otherwise."""
    found = shutil.which(executable) if executable else None
    if found is None:
        return None
    real = Path(found).resolve()
    return real.parent.parent if real.parent.name == "bin" else real.parent


@functools.cache
def _python_folders() -> tuple[Path, ...]:
    """The interpreter's install: prefixes, sysconfig's folders, the import path (less kernel_gym's checkout, of
    which only the package itself is granted: a project folder may hold a `.env` of API keys)."""
    folders = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
               os.path.dirname(os.path.realpath(sys.executable))]
    folders += [p for key, p in sysconfig.get_paths().items() if key != "data"]
    checkout = str(_PACKAGE.parent)
    folders += [p for p in sys.path if p and os.path.isabs(p) and os.path.normpath(p) != checkout]
    return tuple(dict.fromkeys(Path(p).resolve() for p in folders if os.path.exists(p))) + (_PACKAGE,)


@functools.cache
def _install_folders() -> tuple[Path, ...]:
    """The interpreter's install alone (prefixes and sysconfig's folders), without the rest of the import path."""
    folders = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    folders += [p for key, p in sysconfig.get_paths().items() if key != "data"]
    return tuple(dict.fromkeys(Path(p).resolve() for p in folders if os.path.exists(p))) + (_PACKAGE,)


def read_grants(extra: Iterable[str | os.PathLike] = ()) -> list[Path]:
    """What a compiling process may read and execute besides its own folder (see the module's docstring)."""
    from kernel_gym.sandbox.limits import cuda_home

    paths = [Path(p) for p in (*SYSTEM, *SYSTEM_FILES)]
    home = cuda_home()
    if home:
        paths.append(Path(home).resolve())
    for tool in (os.environ.get("CXX"), os.environ.get("CC"), *TOOLS):
        prefix = _prefix(tool)
        if prefix is not None and prefix != Path("/"):
            paths.append(prefix)
    paths += [*_python_folders(), *(Path(p) for p in extra)]
    return [p for p in dict.fromkeys(paths) if p.exists()]


def environment(folder: Path) -> dict[str, str]:
    """A compile check's environment: the build processes' allow-list (no secrets), its folder as HOME and TMPDIR,
    no GPU, Python's import path without the current folder."""
    from kernel_gym.sandbox import limits

    env = limits.worker_environment(folder, "cpu", None, str(_PACKAGE.parent))
    for name in ("TRITON_INTERPRET", "TRITON_CACHE_DIR"):
        env.pop(name, None)
    env.update(CUDA_VISIBLE_DEVICES="", PYTHONSAFEPATH="1")
    return env


def confine(folder: Path) -> list[str]:
    """Confine this process as a compile check (writes beneath `folder`, reads `read_grants()`); the pieces in force."""
    from kernel_gym.sandbox import limits

    return limits.confine(folder, "cpu", "check")


def run(argv: Sequence[str], folder: Path, timeout_s: float) -> subprocess.CompletedProcess:
    """`argv` run as a compile check in `folder` (its working directory): confined, the allow-listed environment, a
    session of its own. Raises subprocess.TimeoutExpired at the limit, after killing the whole session."""
    cmd = [sys.executable, "-m", "kernel_gym.sandbox.toolchain", str(folder), "--", *argv]
    return run_process(cmd, folder, timeout_s)


def run_process(cmd: Sequence[str], folder: Path, timeout_s: float, stdin: str | None = None
                ) -> subprocess.CompletedProcess:
    """`cmd` (a program that confines itself) with a compile check's environment, in `folder`, in a new session."""
    proc = subprocess.Popen(list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=environment(folder), cwd=folder, start_new_session=True)
    try:
        out, err = proc.communicate(stdin, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_session(proc.pid)
        proc.communicate()
        raise
    finally:
        _kill_session(proc.pid)  # what it left running (a compiler's children)
    return subprocess.CompletedProcess(list(cmd), proc.returncode, out, err)


def _kill_session(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---- what a compile log may show -----------------------------------------------------------------------------------

# A diagnostic's first line: EDG (nvcc, NVRTC) `file(12): error: ...`; gcc/clang `file:12:3: error: ...`, and gcc's
# `file: In function 'f':` / `file:12:3:   required from here` context lines.
_EDG = re.compile(r"^(?P<file>[^\s(][^()]*?)\((?P<line>\d+)\): (?:catastrophic error|error|warning|remark|note)\b")
_GCC = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+)(?::\d+)?: ")
_GCC_SCOPE = re.compile(r"^(?P<file>[^\s:][^:]*?): (?:In |At )")
WITHHELD = "[a diagnostic located in {file} (outside the job's folder and the toolchain) was withheld]"


def _inside(name: str, roots: Sequence[Path], folder: Path | None) -> bool:
    path = Path(os.path.normpath(name if os.path.isabs(name) or folder is None else os.path.join(folder, name)))
    if not path.is_absolute():  # a name the compiler gave the job's own source ("cuda_source", "main.cpp")
        return True
    return any(path == root or root in path.parents for root in roots)


def redact(log: str, folder: Path | None, roots: Iterable[str | os.PathLike] = ()) -> str:
    """`log` with every diagnostic located in a file outside `folder` (the job's), `roots` and the toolchain replaced
    by one line naming the file: the file's text (a quoted source line, an identifier in the message) never shows.
    Diagnostics of the job's own sources, with their line numbers, stay as they are."""
    public = [p for p in read_grants() if p not in _python_folders() or p in _install_folders()]  # (no import path)
    allowed = [Path(os.path.normpath(os.path.abspath(r))) for r in (*public, *roots)]
    allowed = [r for r in allowed if str(r) not in ("/", *SYSTEM_FILES)]
    if folder is not None:
        allowed.append(Path(os.path.normpath(os.path.abspath(folder))))
    out: list[str] = []
    hiding = False
    for line in log.splitlines():
        match = _EDG.match(line) or _GCC.match(line) or _GCC_SCOPE.match(line)
        if match:
            hiding = not _inside(match.group("file").strip('"'), allowed, folder)
            if hiding:
                note = WITHHELD.format(file=match.group("file"))
                if not out or out[-1] != note:
                    out.append(note)
                continue
        elif hiding and (line.startswith((" ", "\t", "|")) or not line.strip()):
            continue  # the quoted source line, its caret, the rest of the withheld diagnostic
        else:
            hiding = False
        out.append(line)
    return "\n".join(out) + ("\n" if log.endswith("\n") else "")


def main(argv: list[str] | None = None) -> None:
    """`python -m kernel_gym.sandbox.toolchain FOLDER -- PROGRAM ARGS...`: confine, then exec the program."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: python -m kernel_gym.sandbox.toolchain FOLDER -- PROGRAM [ARGS...]")
    from kernel_gym.sandbox import limits

    limits.die_with_parent()
    confine(Path(args[0]))
    program = shutil.which(args[2]) or args[2]
    os.execv(program, args[2:])


if __name__ == "__main__":
    main()
