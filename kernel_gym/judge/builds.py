"""The judge's build service: every `load_inline` build a candidate asks for is checked here, done by a trusted,
confined build process (`judge/builder.py`) and published into the machine's extension cache, which no runner may
write.

A candidate's runner calls `load_inline` while it imports the solution (or constructs `ModelNew`); its stand-in
(`harness/cuda.py`) sends the call's arguments to the judge in the middle of the request and waits. Here the judge:
1. checks them: known keyword arguments of plain types, a module name that is an identifier, and no flag that makes
   a compiler or linker run a program of the candidate's choosing (`-fplugin`, `-B`, `-specs`, `-ccbin`, response
   files, ...): refused with a message, as a compile error;
2. names the build by content (every argument that changes the result, torch, CUDA and the target architecture),
   so different inputs never share a folder and a resubmission is a cache hit;
3. on a miss, under a per-name lock, starts the build process on a fresh staging folder and, when it built, renames
   that folder into `$KERNEL_GYM_CACHE/extensions/<name>` (atomic: a folder there is always a whole build);
4. answers with the folder and module name, from which the runner imports the module (read-only to it).

A build process costs a Python start and torch's import (~1.2 s on an idle CPU, more on a machine busy compiling)
before its first compiler runs; on cuda the judge keeps started ones in reserve (`SpareBuilders`: as many as builds
ran at once, up to `KERNEL_GYM_SPARE_BUILDERS`, default 8; none on cpu unless asked), each with its imports done,
waiting for a request.

What a candidate can no longer do: plant a library, a precompiled header or a light header in a shared cache that a
later job would load (docs/anti-hacking.md): the build process writes only its staging folder (a PCH it made there
for the request's own flags is published by the judge, `pch_cache.publish_pch`), and its flags are shell-safe
(torch's build.ninja runs them through /bin/sh). What it still decides is its own inputs, which can name no file
outside the toolchain, the Python install and the staging folder (the build process's Landlock reads).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_gym.harness.errors import trim
from kernel_gym.judge import fast_build, pch_cache
from kernel_gym.paths import cache_dir, sweep_dead
from kernel_gym.sandbox import isolation

# load_inline's keyword arguments a build request may carry, and the type each must have.
_SOURCES = ("cpp_sources", "cuda_sources")
_FLAG_LISTS = ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths")
_BOOLS = ("with_cuda", "is_python_module", "with_pytorch_error_handling", "no_implicit_headers")
_IGNORED = ("verbose", "build_directory", "keep_intermediates", "use_pch")  # ours to choose
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# Flags that make gcc, nvcc or the linker run (or load) a program named by the flag: the build would run the
# candidate's code with the build process's rights. Matched on every piece of a flag (split at spaces, commas, '=').
_RUNS_PROGRAM = re.compile(r"^(?:-fplugin\S*|-B.*|--?specs\S*|-wrapper|--?plugin\S*|-ccbin|--compiler-bindir\S*|"
                           r"-fuse-ld\S*/\S*|-o|--output-file)$")
_LINKER_B = frozenset({"-Bstatic", "-Bdynamic", "-Bsymbolic", "-Bsymbolic-functions"})
# torch writes the flags into build.ninja unquoted, and ninja runs each command through /bin/sh: a `;`, `$(...)`, `|`,
# `>` or a newline in a flag would run a shell command of the candidate's in the build process (which writes the
# machine's header caches: a planted precompiled header would be compiled into later jobs' extensions). Flags and
# include paths are made of these characters only.
_SHELL_SAFE = re.compile(r"[A-Za-z0-9_+\-=,./:% ]*")
DEFAULT_TIMEOUT_S = 600.0


class BuildRefused(ValueError):
    """A build request the judge does not run (its message goes to the candidate as a compile error)."""


def _flag_pieces(flag: str) -> list[str]:
    return [p for p in re.split(r"[\s,=]+", flag) if p] + [flag]


def _strings(params: dict[str, Any], key: str) -> list[str]:
    value = params[key]
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise BuildRefused(f"load_inline's {key} must be a string or a list of strings")
    return value


def normalize(name: Any, params: Any) -> tuple[str, dict[str, Any]]:
    """The checked module name and load_inline arguments of a request, or BuildRefused saying what is wrong."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise BuildRefused(f"load_inline's name must be a Python identifier of at most 64 characters, got {name!r}")
    if not isinstance(params, dict):
        raise BuildRefused("load_inline's arguments did not arrive as keywords")
    unknown = sorted(set(params) - {*_SOURCES, "functions", *_FLAG_LISTS, *_BOOLS, *_IGNORED})
    if unknown:
        raise BuildRefused(f"load_inline arguments this harness does not build with: {', '.join(unknown)}")
    out: dict[str, Any] = {key: _strings(params, key) for key in (*_SOURCES, *_FLAG_LISTS) if params.get(key) is not None}
    if not out.get("cpp_sources") and not out.get("cuda_sources"):
        raise BuildRefused("load_inline was given no C++ or CUDA source")
    functions = params.get("functions")
    if functions is not None:
        if isinstance(functions, str):
            functions = [functions]
        ok = (isinstance(functions, list) and all(isinstance(f, str) for f in functions)) or (
            isinstance(functions, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in functions.items()))
        if not ok or not all(_NAME.fullmatch(f) for f in functions):
            raise BuildRefused("load_inline's functions must be identifiers (a list, or a dict of name: docstring)")
        out["functions"] = functions
    for key in _FLAG_LISTS:
        for flag in out.get(key, ()):
            if not _SHELL_SAFE.fullmatch(flag):
                raise BuildRefused(f"the build flag {flag!r} in {key} is not allowed: flags and include paths may "
                                   "hold letters, digits, spaces and _ + - = , . / : % only (build commands run "
                                   "through a shell)")
            for piece in _flag_pieces(flag):
                if piece.startswith("@") or (_RUNS_PROGRAM.match(piece) and piece not in _LINKER_B):
                    raise BuildRefused(f"the build flag {flag!r} in {key} is not allowed: it would make the "
                                       "compiler or linker load or run another program, read flags from a file, "
                                       "or write where the harness does not look")
    for key in _BOOLS:
        value = params.get(key)
        if value is None:
            continue
        if not isinstance(value, bool):
            raise BuildRefused(f"load_inline's {key} must be True or False")
        out[key] = value
    return name, with_cutlass(out)


def with_cutlass(params: dict[str, Any]) -> dict[str, Any]:
    """A source that includes CUTLASS/CuTe headers builds with the installed package's include folders and the flag
    CUTLASS needs (harness/cutlass.py); the judge adds them after checking the solution's own flags."""
    from kernel_gym.harness import cutlass

    if not cutlass.uses(*[t for key in _SOURCES for t in params.get(key, ())]) or not cutlass.include_dirs():
        return params
    out = dict(params)
    out["extra_include_paths"] = [*params.get("extra_include_paths", ()), *cutlass.include_dirs()]
    cuda_flags = list(params.get("extra_cuda_cflags", ()))
    out["extra_cuda_cflags"] = cuda_flags + [f for f in cutlass.NVCC_FLAGS if f not in cuda_flags]
    return out


def toolchain(device: str) -> dict[str, str]:
    """What besides the arguments decides a build: torch, CUDA, the compiler and the target architecture (the
    judge's GPU on cuda; $TORCH_CUDA_ARCH_LIST, if set, wins, as it does in torch's own builds)."""
    import torch
    from torch.utils.cpp_extension import get_cxx_compiler

    arch = os.environ.get("TORCH_CUDA_ARCH_LIST", "")
    if not arch and device == "cuda" and torch.cuda.is_available():
        arch = ".".join(map(str, torch.cuda.get_device_capability()))
    return {"torch": torch.__version__, "cuda": str(torch.version.cuda), "arch": arch, "cxx": get_cxx_compiler()}


def cache_root() -> Path:
    return cache_dir("extensions")


def build_name(name: str, params: dict[str, Any], chain: dict[str, str]) -> str:
    digest = hashlib.sha256(json.dumps([name, params, chain, fast_build.enabled()], sort_keys=True).encode())
    return f"{name}_{digest.hexdigest()[:20]}"


def _lock(path: Path, deadline: float):
    """An exclusive lock on `path`, polled until `deadline` (another job may be building the same thing)."""
    f = open(path, "a")  # noqa: SIM115 - held by the caller's with-block
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return f
        except BlockingIOError:
            if time.monotonic() > deadline:
                f.close()
                raise TimeoutError(f"waited past the compile limit for another job's build of {path.stem}") from None
            time.sleep(0.1)


def _built(folder: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((folder / "kernel_gym_build.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and isinstance(meta.get("module"), str) else None


def build(request: Any, device: str, deadline: float | None = None) -> dict[str, Any]:
    """Serve one build request of a runner: `{"ok": True, "directory", "module", "cached", "seconds"}` or
    `{"ok": False, "log"}`. Never raises for the request's content."""
    t0 = time.monotonic()
    deadline = deadline if deadline is not None else t0 + DEFAULT_TIMEOUT_S
    try:
        name, params = normalize(request.get("name") if isinstance(request, dict) else None,
                                 request.get("params") if isinstance(request, dict) else None)
    except BuildRefused as refused:
        return {"ok": False, "log": str(refused)}
    chain = toolchain(device)
    unique = build_name(name, params, chain)
    root = cache_root()
    (root / ".locks").mkdir(parents=True, exist_ok=True)
    final = root / unique
    try:
        with _lock(root / ".locks" / f"{unique}.lock", deadline):
            meta = _built(final)
            if meta is not None:
                return {"ok": True, "directory": str(final), "module": meta["module"], "cached": True,
                        "seconds": round(time.monotonic() - t0, 3)}
            if final.exists():  # a folder without its record: an interrupted publish; build again
                shutil.rmtree(final, ignore_errors=True)
            return _build_now(unique, params, device, chain, final, deadline, t0)
    except TimeoutError as e:
        return {"ok": False, "log": str(e)}


def sweep_staging(root: Path) -> int:
    """Remove staging folders of judges that died mid-build (each is named `<build>.<judge pid>.<random>`)."""
    return sweep_dead((root / ".staging").glob("*.*.*"), lambda folder: int(folder.name.split(".")[1]))


@functools.cache
def _swept_once(root: Path) -> int:
    return sweep_staging(root)


def _build_now(unique: str, params: dict[str, Any], device: str, chain: dict[str, str], final: Path,
               deadline: float, t0: float) -> dict[str, Any]:
    builder = SPARES.take(device, chain, final.parent)
    staging = builder.staging
    try:
        answer = _run_builder(builder, unique, params, device, deadline)
        isolation.note("builder", answer.get("isolation"))
        try:  # the PCH it made for this request's flags (its key only) into the cache, which it may not write
            pch_cache.publish_pch(staging / "headers", params)
        except Exception as e:  # noqa: BLE001 - an optimisation: the build's answer stands
            logging.getLogger(__name__).warning("publishing a precompiled header failed: %s", e)
        if not answer.get("ok"):
            from kernel_gym.sandbox.toolchain import redact  # (no quote of a file outside the build's folder)

            return {"ok": False, "log": trim(redact(str(answer.get("log") or "the build failed"), staging))}
        module = str(answer.get("module") or "")
        built = staging / module
        if not _NAME.fullmatch(module) or not module.startswith(unique) or not built.is_dir():
            return {"ok": False, "log": "the build process gave no module"}
        seconds = round(time.monotonic() - t0, 3)
        (built / "kernel_gym_build.json").write_text(json.dumps({"module": module, "seconds": seconds,
                                                                 "toolchain": chain}))
        isolation.seal(built)  # root's and read-only before it is published (its builder's uid may come back)
        os.rename(built, final)
        return {"ok": True, "directory": str(final), "module": module, "cached": False, "seconds": seconds}
    finally:
        SPARES.done(builder)
        shutil.rmtree(staging, ignore_errors=True)


@dataclass
class Builder:
    """A started build process (`judge/builder.py`) and its staging folder; it imports torch, then waits for its
    one request on stdin."""

    proc: subprocess.Popen
    staging: Path
    key: tuple[str, str, str] = ("", "", "")  # the reserve it was taken for (SpareBuilders.key)


def start_builder(device: str, chain: dict[str, str], root: Path) -> Builder:
    from kernel_gym.sandbox import limits

    (root / ".staging").mkdir(parents=True, exist_ok=True)
    _swept_once(root)
    # named <what>.<judge pid>.<random>, as sweep_staging expects
    staging = Path(tempfile.mkdtemp(prefix=f"build.{os.getpid()}.", dir=root / ".staging"))
    env = limits.worker_environment(staging, device, None, str(Path(__file__).resolve().parents[2]))
    env.pop("TRITON_INTERPRET", None)
    if chain["arch"]:
        env["TORCH_CUDA_ARCH_LIST"] = chain["arch"]  # the judge's GPU: the builder itself sees none
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["MAX_JOBS"] = env.get("MAX_JOBS", "2")  # ninja's parallelism: a load_inline build has two files
    proc = subprocess.Popen([sys.executable, "-m", "kernel_gym.judge.builder"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=staging,
                            start_new_session=True)
    return Builder(proc, staging)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the compilers it started, too
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _stop_builder(builder: Builder) -> None:
    _kill(builder.proc)
    for stream in (builder.proc.stdin, builder.proc.stdout, builder.proc.stderr):
        if stream is not None:
            stream.close()
    shutil.rmtree(builder.staging, ignore_errors=True)


class SpareBuilders:
    """Build processes started ahead, per (device, toolchain, cache): a build takes a waiting one (its imports done)
    and a new one starts in its place. The reserve grows to the most builds that ran at once, up to `limit`.
    Spares are started from one long-lived thread: a build process dies with the thread that started it
    (PR_SET_PDEATHSIG), and a job's thread may end before the spare is used."""

    def __init__(self, limit: int | None = None):
        self.limit = limit
        self._reset()
        if hasattr(os, "register_at_fork"):  # a forked child starts its own (the parent's spares stay the parent's)
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self.lock = threading.Lock()
        self.spares: dict[tuple[str, str, str], list[Future]] = {}
        self.running: dict[tuple[str, str, str], int] = {}
        self.most: dict[tuple[str, str, str], int] = {}
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernel-gym-builder-start")

    def cap(self, device: str) -> int:
        if self.limit is not None:
            return self.limit
        default = "8" if device == "cuda" else "0"
        try:
            return max(0, int(os.environ.get("KERNEL_GYM_SPARE_BUILDERS", default) or 0))
        except ValueError:
            return int(default)

    @staticmethod
    def key(device: str, chain: dict[str, str], root: Path) -> tuple[str, str, str]:
        """What a waiting build process was started with: the toolchain, the cache and its environment (a spare
        started before a variable changed, e.g. CXX or MAX_JOBS, serves no build after it)."""
        from kernel_gym.sandbox import limits

        env = limits.worker_environment(Path("/"), device, None, "")
        env = {k: v for k, v in env.items() if k not in ("HOME", "TMPDIR", "TRITON_CACHE_DIR", "PYTHONPATH")}
        return (device, json.dumps([chain, env], sort_keys=True), str(root))

    def take(self, device: str, chain: dict[str, str], root: Path) -> Builder:
        key = self.key(device, chain, root)
        builder = None
        with self.lock:
            spares = self.spares.setdefault(key, [])
            while spares and builder is None:
                candidate = spares.pop(0).result()
                if candidate.proc.poll() is None:
                    builder = candidate
                else:  # it died waiting (killed from outside): start another
                    threading.Thread(target=_stop_builder, args=(candidate,), daemon=True).start()
            self.most[key] = max(self.most.get(key, 0), self.running.get(key, 0) + 1)
            want = min(self.cap(device), self.most[key])
            spares += [self._starter.submit(start_builder, device, chain, root) for _ in range(want - len(spares))]
        builder = builder or start_builder(device, chain, root)
        builder.key = key
        with self.lock:  # (counted once it has one: `done` follows every build that took a process)
            self.running[key] = self.running.get(key, 0) + 1
        return builder

    def done(self, builder: Builder) -> None:
        """The build that took `builder` has ended."""
        with self.lock:
            self.running[builder.key] = max(0, self.running.get(builder.key, 0) - 1)

    def close(self) -> None:
        """Stop every waiting build process now (they also end with this process: the parent-death signal, and the
        end of their stdin)."""
        with self.lock:
            spares = [f for group in self.spares.values() for f in group]
            self.spares.clear()
        for future in spares:
            _stop_builder(future.result())

    def waiting(self) -> int:
        with self.lock:
            return sum(len(group) for group in self.spares.values())


SPARES = SpareBuilders()


def _run_builder(builder: Builder, unique: str, params: dict[str, Any], device: str,
                 deadline: float) -> dict[str, Any]:
    staging, proc = builder.staging, builder.proc
    request = json.dumps({"name": unique, "params": params, "staging": str(staging), "device": device,
                          "fast": fast_build.enabled()})  # the judge's setting (its name is in the build's)
    try:
        stdout, stderr = proc.communicate(request, timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return {"ok": False, "log": "the build did not finish within the compile limit"}
    finally:
        _kill(proc)
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return {"ok": False, "log": f"the build process ended with code {proc.returncode}:\n{trim(stderr, 3000)}"}
    return answer
