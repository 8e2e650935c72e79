"""Run a C task's function on the CPU: compile it with the host compiler, load it with ctypes, call it on tensors.

A C→CUDA task (see `kernel_gym/tasks/c_task.py` and docs/c2cuda.md) is turned into a KernelBench-format program
whose `Model.forward` calls `CModel.__call__` here: the inputs are copied to contiguous CPU tensors, output buffers
are allocated (zeros; "inout" buffers start as copies of their input), the C function runs once, single-threaded,
and the outputs go back to the inputs' device. The harness compares a candidate with exactly these outputs.

- Compiled once per source (content hash) with `cc -O2 -std=c11 -fno-fast-math -ffp-contract=off -shared -fPIC`
  into `$KERNEL_GYM_CACHE/c_reference/` (default `~/.cache/kernel_gym`): IEEE float semantics, no FMA
  contraction, so the outputs are a deterministic function of the inputs on every x86-64 / aarch64 host.
- Outputs are cached per input content (hence per seed) in the process, when the C call is costly compared with
  hashing its inputs (`OutputCache`): a worker that sees the same inputs again (fixed seeds, repeated tests)
  skips the CPU run.
- Every call's C time (the ctypes call alone, no copies) is recorded in `CModel.c_ms`; the harness reports it as
  `signals["c_reference_ms"]` and `signals["speedup_vs_c"]`.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernel_gym.errors import TaskFormatError
from kernel_gym.paths import cache_dir

CFLAGS = ("-O2", "-std=c11", "-fno-fast-math", "-ffp-contract=off", "-shared", "-fPIC")
LIBS = ("-lm",)

# C parameter types: scalars (ctypes type) and pointees (torch dtype).
SCALAR_TYPES: dict[str, Any] = {
    "int": ctypes.c_int, "int32_t": ctypes.c_int32, "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint,
    "uint32_t": ctypes.c_uint32, "long": ctypes.c_long, "long long": ctypes.c_longlong, "int64_t": ctypes.c_int64,
    "size_t": ctypes.c_size_t, "float": ctypes.c_float, "double": ctypes.c_double,
}
POINTER_DTYPES: dict[str, torch.dtype] = {
    "float": torch.float32, "double": torch.float64, "int": torch.int32, "int32_t": torch.int32,
    "long": torch.int64, "long long": torch.int64, "int64_t": torch.int64, "unsigned char": torch.uint8,
    "uint8_t": torch.uint8, "char": torch.int8, "signed char": torch.int8, "int8_t": torch.int8,
    "short": torch.int16, "int16_t": torch.int16,
}
MAX_C_TIMES = 64  # recorded C call times kept per model


def cache_root() -> Path:
    return cache_dir("c_reference")


def find_cc() -> str | None:
    """The host C compiler: $CC, else cc, gcc or clang on PATH."""
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


_LOCK = threading.Lock()
_LIBS: dict[str, ctypes.CDLL] = {}


def compile_source(source: str, *, timeout_s: float = 120.0) -> Path:
    """The shared library of `source` (built once per content hash; concurrent builders race safely)."""
    cc = find_cc()
    if cc is None:
        raise TaskFormatError("no C compiler found (set $CC or install cc/gcc/clang) to run C reference tasks")
    digest = hashlib.sha256("\0".join((source, *CFLAGS, *LIBS, os.path.basename(cc))).encode()).hexdigest()[:20]
    lib = cache_root() / f"{digest}.so"
    if lib.is_file():
        return lib
    lib.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=lib.parent) as tmp:
        src = Path(tmp) / "reference.c"
        src.write_text(source)
        out = Path(tmp) / "reference.so"
        proc = subprocess.run([cc, *CFLAGS, "-o", str(out), str(src), *LIBS], capture_output=True, text=True,
                              timeout=timeout_s, check=False)
        if proc.returncode != 0:
            raise TaskFormatError(f"the C reference does not compile with {cc}:\n{proc.stderr.strip()[-4000:]}")
        os.replace(out, lib)  # atomic: another process building the same source writes the same bytes
    return lib


def load_function(source: str, entry: str) -> Any:
    """The ctypes function `entry` of `source`, compiled and loaded once per process."""
    lib_path = compile_source(source)
    with _LOCK:
        lib = _LIBS.get(str(lib_path))
        if lib is None:
            lib = _LIBS[str(lib_path)] = ctypes.CDLL(str(lib_path))
    try:
        fn = getattr(lib, entry)
    except AttributeError:
        raise TaskFormatError(f"the C reference defines no function {entry!r}") from None
    fn.restype = None
    return fn


@dataclass(frozen=True)
class Arg:
    """One C parameter: its name, C base type, whether it is a pointer, its role and (buffers) its shape.

    role: "size" (an int from the shapes: value is an expression of size symbols), "param" (a constant passed to
    the constructor), "in" (read-only buffer, a forward() input), "out" (written buffer, returned) or "inout"
    (a forward() input whose updated copy is returned).
    """

    name: str
    ctype: str
    pointer: bool
    role: str
    shape: tuple[str, ...] = ()
    value: str = ""  # "size": the expression; "param": repr of the constant


class OutputCache:
    """Reference outputs per (function, scalars, input bytes), LRU within a byte budget, used only when a C call
    costs more than hashing its inputs."""

    HASH_BYTES_PER_MS = 1e6  # blake2b, ~1 GB/s on one core

    def __init__(self, budget_bytes: int = 256 << 20):
        self.budget, self.used = budget_bytes, 0
        self.entries: OrderedDict[bytes, tuple[torch.Tensor, ...]] = OrderedDict()
        self.hits = 0

    def worth_it(self, c_ms: float | None, input_bytes: int) -> bool:
        return c_ms is not None and c_ms > 2.0 * input_bytes / self.HASH_BYTES_PER_MS

    @staticmethod
    def key(tag: str, scalars: tuple, tensors: list[torch.Tensor]) -> bytes:
        h = hashlib.blake2b(f"{tag}|{scalars!r}".encode(), digest_size=20)
        for t in tensors:
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.numpy().tobytes() if t.numel() else b"")
        return h.digest()

    def get(self, key: bytes) -> tuple[torch.Tensor, ...] | None:
        with _LOCK:
            hit = self.entries.get(key)
            if hit is not None:
                self.entries.move_to_end(key)
                self.hits += 1
        return tuple(t.clone() for t in hit) if hit is not None else None

    def put(self, key: bytes, outs: tuple[torch.Tensor, ...]) -> None:
        size = sum(t.numel() * t.element_size() for t in outs)
        if size > self.budget // 4:
            return
        with _LOCK:
            self.entries[key] = tuple(t.clone() for t in outs)
            self.used += size
            while self.used > self.budget and self.entries:
                _, old = self.entries.popitem(last=False)
                self.used -= sum(t.numel() * t.element_size() for t in old)


CACHE = OutputCache()


def bind_sizes(args: tuple[Arg, ...], inputs: dict[str, torch.Tensor]) -> dict[str, int]:
    """Size symbols read from the input buffers' shapes (`shape = ["rows", "cols"]` binds rows and cols)."""
    dims: dict[str, int] = {}
    for a in args:
        if a.role not in ("in", "inout"):
            continue
        t = inputs[a.name]
        if t.dim() != len(a.shape):
            raise ValueError(f"input {a.name!r} must have {len(a.shape)} dimension(s) {list(a.shape)}, got {tuple(t.shape)}")
        for sym, n in zip(a.shape, t.shape):
            if sym.isidentifier() and sym not in dims:
                dims[sym] = int(n)
    return dims


def shape_of(a: Arg, env: dict[str, Any]) -> tuple[int, ...]:
    return tuple(int(eval(s, {"__builtins__": {}}, env)) for s in a.shape)  # noqa: S307 - trusted task metadata


class CModel(torch.nn.Module):
    """The reference `Model` of a C task: calls the C function on CPU copies of the inputs (see module docstring).

    Subclasses (the generated task program) set SOURCE (the C text), ENTRY (the function name) and ARGS (a tuple
    of `Arg`s, in C parameter order); the constructor takes the "param" arguments in order.
    """

    SOURCE: str = ""
    ENTRY: str = ""
    ARGS: tuple[Arg, ...] = ()
    BASELINE: type | None = None  # the task's PyTorch baseline, used for shape-only (meta device) tracing

    def __init__(self, *params: Any):
        super().__init__()
        names = [a.name for a in self.ARGS if a.role == "param"]
        if len(params) != len(names):
            raise TypeError(f"{type(self).__name__} takes {len(names)} argument(s) ({', '.join(names)}), got {len(params)}")
        self.params = dict(zip(names, params))
        self.c_ms: list[float] = []
        self._fn = load_function(self.SOURCE, self.ENTRY)

    def forward(self, *inputs: torch.Tensor) -> Any:
        in_args = [a for a in self.ARGS if a.role in ("in", "inout")]
        if len(inputs) != len(in_args):
            raise TypeError(f"forward takes {len(in_args)} input(s) ({', '.join(a.name for a in in_args)}), got {len(inputs)}")
        device = inputs[0].device if inputs else torch.device("cpu")
        if device.type == "meta":  # roofline estimates trace shapes only: the baseline's ops stand for the task
            return self._meta(inputs)
        host = {a.name: x.detach().to("cpu").contiguous() for a, x in zip(in_args, inputs)}
        dims = bind_sizes(self.ARGS, host)
        env = {**dims, **self.params}
        for a in in_args:
            want = POINTER_DTYPES[a.ctype]
            if host[a.name].dtype != want:
                raise TypeError(f"input {a.name!r} must be {want}, got {host[a.name].dtype}")
        outs = self._run(env, host)
        outs = tuple(o.to(device) for o in outs)
        return outs[0] if len(outs) == 1 else outs

    def _meta(self, inputs: tuple[torch.Tensor, ...]) -> Any:
        if self.BASELINE is not None:
            return self.BASELINE(*self.params.values())(*inputs)
        in_args = [a for a in self.ARGS if a.role in ("in", "inout")]
        env = {**bind_sizes(self.ARGS, dict(zip((a.name for a in in_args), inputs))), **self.params}
        outs = tuple(torch.empty(shape_of(a, env), dtype=POINTER_DTYPES[a.ctype], device="meta")
                     for a in self.ARGS if a.role in ("out", "inout"))
        return outs[0] if len(outs) == 1 else outs

    def _run(self, env: dict[str, Any], host: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        scalars = tuple((a.name, eval(a.value, {"__builtins__": {}}, env) if a.role == "size" else env[a.name])  # noqa: S307
                        for a in self.ARGS if not a.pointer)
        tensors = [host[a.name] for a in self.ARGS if a.role in ("in", "inout")]
        nbytes = sum(t.numel() * t.element_size() for t in tensors)
        key = None
        if CACHE.worth_it(self.c_ms[-1] if self.c_ms else None, nbytes):
            key = CACHE.key(self.SOURCE + self.ENTRY, scalars, tensors)
            hit = CACHE.get(key)
            if hit is not None:
                return hit
        values, outs, buffers = dict(scalars), [], {}
        for a in self.ARGS:
            if a.role == "out":
                buffers[a.name] = torch.zeros(shape_of(a, env), dtype=POINTER_DTYPES[a.ctype])
            elif a.role == "inout":
                buffers[a.name] = host[a.name].clone()
            elif a.role == "in":
                buffers[a.name] = host[a.name]
            if a.role in ("out", "inout"):
                outs.append(buffers[a.name])
        c_args = []
        for a in self.ARGS:
            if a.pointer:
                c_args.append(ctypes.c_void_p(buffers[a.name].data_ptr()))
            else:
                c_args.append(SCALAR_TYPES[a.ctype](values[a.name]))
        t0 = time.perf_counter()
        self._fn(*c_args)
        self.c_ms = (self.c_ms + [(time.perf_counter() - t0) * 1e3])[-MAX_C_TIMES:]
        if key is not None:
            CACHE.put(key, tuple(outs))
        return tuple(outs)
