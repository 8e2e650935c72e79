"""C → CUDA tasks: a C function plus a TOML header, turned into a KernelBench-format reference program.

A task file `<name>.c` holds one C function (`void`, pointer arguments for buffers) and, in a block comment that
starts with `/* kernel-gym`, TOML metadata (docs/c2cuda.md has the full format):

    /* kernel-gym
    description = "SAXPY: y <- a*x + y on n floats"
    level = 1                           # difficulty as in KernelBench: 1 map, 2 reduction/stencil/..., 3 irregular
    baseline = "a * x + y"              # PyTorch expression (or a function body with `return`) on the device
    [sizes]                             # full (GPU) sizes of the size symbols
    n = 16_777_216
    [cpu]
    n = 4096
    [alt]
    n = 4099
    [args]
    a = { param = 2.5 }                 # a constant: a constructor argument of Model and ModelNew
    x = { shape = ["n"] }               # const pointer: an input buffer (init "randn" by default)
    y = { shape = ["n"], role = "inout" }   # an input whose updated copy is returned
    */
    void saxpy(int n, float a, const float *x, float *y) { ... }

`program(...)` renders the equivalent KernelBench program: `Model` (a `c_reference.CModel` calling the compiled C
function on CPU copies of the inputs), `Baseline` (the PyTorch expression, what `speedup` is measured against),
`get_inputs()`, `get_init_inputs()`, size globals and a `KERNEL_GYM` dict. The harness runs that program like any
other task, so correctness, anti-hack checks, feedback and rewards are the same pipeline.

    python -m kernel_gym.tasks.c_task FILE.c      # print the generated program
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernel_gym.c_params import parse_params
from kernel_gym.errors import TaskFormatError
from kernel_gym.tasks.c_reference import POINTER_DTYPES, SCALAR_TYPES, Arg
from kernel_gym.tasks.task import Task, parse_task

HEADER = re.compile(r"/\*\s*kernel-gym\b(.*?)\*/\n?", re.S)
ROLES = ("size", "param", "in", "out", "inout")
INITS = {"randn": "torch.randn(shape, dtype={dt})", "rand": "torch.rand(shape, dtype={dt})"}
_META_KEYS = ("description", "level", "entry", "baseline", "dtype", "atol", "rtol", "difficulty", "allow_precision",
              "sizes", "cpu", "alt", "full_alt", "args")


@dataclass(frozen=True)
class CTask:
    """A parsed C task: the C code (header removed), its entry function's arguments and the metadata."""

    name: str
    code: str
    entry: str
    args: tuple[Arg, ...]
    meta: dict[str, Any]
    inits: dict[str, str]

    @property
    def params(self) -> list[Arg]:
        return [a for a in self.args if a.role == "param"]

    @property
    def inputs(self) -> list[Arg]:
        return [a for a in self.args if a.role in ("in", "inout")]

    @property
    def outputs(self) -> list[Arg]:
        return [a for a in self.args if a.role in ("out", "inout")]


def _c_params(code: str, entry: str, where: str) -> list[tuple[str, str, bool, bool]]:
    """(name, base type, pointer, const) per parameter of `void entry(...)`."""
    m = re.search(rf"\bvoid\s+{re.escape(entry)}\s*\(([^)]*)\)\s*\{{", code)
    if m is None:
        raise TaskFormatError(f"{where}: no definition `void {entry}(...) {{` (the entry function must return void)")
    out = []
    for p in parse_params(m.group(1)):
        if not p.name:
            raise TaskFormatError(f"{where}: cannot read the parameter {p.ctype!r} of {entry}")
        known = POINTER_DTYPES if p.pointer else SCALAR_TYPES
        if p.ctype not in known:
            raise TaskFormatError(f"{where}: parameter {p.name!r} has type {p.ctype!r}{' *' if p.pointer else ''}; "
                                  f"supported: {', '.join(known)}")
        out.append((p.name, p.ctype, p.pointer, p.const))
    return out


def _arg(name: str, ctype: str, pointer: bool, const: bool, spec: Any, sizes: dict, where: str) -> Arg:
    spec = {} if spec is None else spec
    if not isinstance(spec, dict):
        raise TaskFormatError(f"{where}: args.{name} must be a table")
    if not pointer:
        if "param" in spec:
            return Arg(name, ctype, False, "param", value=repr(spec["param"]))
        value = str(spec.get("value", name))
        if "value" not in spec and name not in sizes:
            raise TaskFormatError(f"{where}: scalar {name!r} is neither a size symbol ([sizes]) nor given "
                                  "`{ param = ... }` or `{ value = \"expr\" }` in [args]")
        return Arg(name, ctype, False, "size", value=value)
    role = spec.get("role", "in" if const else "out")
    if role not in ("in", "out", "inout"):
        raise TaskFormatError(f"{where}: args.{name}.role must be in, out or inout, not {role!r}")
    if role == "in" and not const:
        raise TaskFormatError(f"{where}: input buffer {name!r} should be declared const in C")
    shape = spec.get("shape")
    if not isinstance(shape, list) or not shape:
        raise TaskFormatError(f"{where}: buffer {name!r} needs `shape = [...]` (size symbols or expressions)")
    return Arg(name, ctype, True, role, shape=tuple(str(s) for s in shape))


def parse_c(text: str, name: str, where: str = "") -> CTask:
    """Read a `.c` task: the TOML header, the entry function's signature, each argument's role and shape."""
    where = where or name
    m = HEADER.search(text)
    if m is None:
        raise TaskFormatError(f"{where}: no `/* kernel-gym ... */` metadata comment")
    try:
        meta = tomllib.loads(m.group(1))
    except tomllib.TOMLDecodeError as e:
        raise TaskFormatError(f"{where}: the kernel-gym header is not valid TOML: {e}") from e
    unknown = sorted(set(meta) - set(_META_KEYS))
    if unknown:
        raise TaskFormatError(f"{where}: unknown header key(s) {', '.join(unknown)}; known: {', '.join(_META_KEYS)}")
    level = meta.get("level")
    if level is not None and (not isinstance(level, int) or isinstance(level, bool) or level < 1):
        raise TaskFormatError(f"{where}: level must be a positive integer (1, 2, 3 as in KernelBench), not {level!r}")
    sizes = meta.get("sizes", {})
    if not sizes or not all(isinstance(v, int) for v in sizes.values()):
        raise TaskFormatError(f"{where}: [sizes] must give an integer full size for every size symbol")
    for key in ("cpu", "alt", "full_alt"):
        if key in meta and not set(meta[key]) <= set(sizes):
            raise TaskFormatError(f"{where}: [{key}] names symbols missing from [sizes]")
    code = (text[: m.start()] + text[m.end():]).strip() + "\n"
    entry = meta.get("entry", name)
    specs = meta.get("args", {})
    params = _c_params(code, entry, where)
    extra = set(specs) - {p[0] for p in params}
    if extra:
        raise TaskFormatError(f"{where}: [args] names {', '.join(sorted(extra))}, not parameters of {entry}")
    args = tuple(_arg(*p, specs.get(p[0]), sizes, where) for p in params)
    if not any(a.role in ("out", "inout") for a in args):
        raise TaskFormatError(f"{where}: {entry} writes no buffer (declare outputs as non-const pointers)")
    inits = {}
    for a in args:
        if a.role in ("in", "inout"):
            init = str((specs.get(a.name) or {}).get("init", "randn"))
            if init in INITS and POINTER_DTYPES[a.ctype] not in _FLOATS:
                raise TaskFormatError(f"{where}: integer buffer {a.name!r} needs an `init` expression")
            inits[a.name] = init
    return CTask(name=name, code=code, entry=entry, args=args, meta=meta, inits=inits)


def _floats() -> tuple:
    import torch

    return (torch.float16, torch.bfloat16, torch.float32, torch.float64)


_FLOATS = _floats()


def _dtype_name(a: Arg) -> str:
    return "torch." + str(POINTER_DTYPES[a.ctype]).removeprefix("torch.")


def _bindings(t: CTask, indent: str) -> list[str]:
    """Lines binding each size symbol from the first input shape that has it."""
    seen, lines = set(), []
    for a in t.inputs:
        for i, sym in enumerate(a.shape):
            if sym.isidentifier() and sym not in seen and sym not in {p.name for p in t.params}:
                seen.add(sym)
                lines.append(f"{indent}{sym} = {a.name}.shape[{i}]")
    return lines


def interface(t: CTask) -> str:
    """How ModelNew is called: constructor constants, forward inputs and the returned outputs."""
    ins = ", ".join(f"{a.name}: {str(POINTER_DTYPES[a.ctype]).removeprefix('torch.')}[{', '.join(a.shape)}]"
                    for a in t.inputs)
    outs = [f"{a.name}: {str(POINTER_DTYPES[a.ctype]).removeprefix('torch.')}[{', '.join(a.shape)}]"
            + (" (updated copy)" if a.role == "inout" else "") for a in t.outputs]
    ctor = ", ".join(f"{a.name}={a.value}" for a in t.params)
    sizes = [a for a in t.args if a.role == "size"]
    lines = [f"ModelNew({ctor})" + ("  # constants of the C call" if ctor else ""),
             f"ModelNew.forward({ins}) -> " + (outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")")]
    if sizes:
        lines.append("C size arguments from the shapes: " + ", ".join(f"{a.name} = {a.value}" for a in sizes))
    return "\n".join(lines)


def _baseline_body(expr: str) -> list[str]:
    lines = expr.strip("\n").splitlines()
    if len(lines) == 1 and not lines[0].lstrip().startswith("return"):
        return [f"        return {lines[0].strip()}"]
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return ["        " + line[indent:] if line.strip() else "" for line in lines]


def program(t: CTask) -> str:
    """The KernelBench-format reference program of a C task (see the module docstring)."""
    meta = t.meta
    kg = {k: dict(meta[k]) for k in ("cpu", "alt", "full_alt") if k in meta}
    kg.update({k: meta[k] for k in ("dtype", "atol", "rtol", "difficulty", "allow_precision") if k in meta})
    kg.setdefault("dtype", "float32")
    kg.update({"format": "c", "entry": t.entry})
    ctor = ", ".join(a.name for a in t.params)
    ins = ", ".join(a.name for a in t.inputs)
    desc = str(meta.get("description", f"C function {t.entry}")).replace('"""', "'''")
    out = [f'"""{desc}"""', "import math  # noqa: F401 - available to baseline and init expressions", "",
           "import torch", "import torch.nn as nn", "",
           "from kernel_gym.tasks.c_reference import Arg, CModel", ""]
    out += [f"{k} = {v}" for k, v in meta["sizes"].items()]
    out += ["", f"KERNEL_GYM = {kg!r}", "", f"C_SOURCE = {t.code!r}"]
    if "baseline" in meta:  # without one, the harness times the C reference itself (see docs/c2cuda.md)
        out += ["", "", "class Baseline(nn.Module):",
                '    """The straightforward PyTorch implementation on the device: what `speedup` is measured against."""',
                "", f"    def __init__(self{', ' + ctor if ctor else ''}):", "        super().__init__()"]
        out += [f"        self.{a.name} = {a.name}" for a in t.params]
        out += ["", f"    def forward(self, {ins}):"]
        out += [f"        {a.name} = self.{a.name}" for a in t.params]
        out += _bindings(t, "        ") + _baseline_body(str(meta["baseline"]))
    out += ["", "", "class Model(CModel):", f'    """Calls the C function `{t.entry}` on CPU copies of the inputs and '
            'returns the buffers it writes."""', "", "    SOURCE = C_SOURCE", f"    ENTRY = {t.entry!r}",
            "    ARGS = (" + "".join(f"\n        {a!r}," for a in t.args) + "\n    )"]
    if "baseline" in meta:
        out += ["    BASELINE = Baseline"]
    out += ["", f"    def __init__(self{', ' + ctor if ctor else ''}):", f"        super().__init__({ctor})", "",
            f"    def forward(self, {ins}):", f"        return super().forward({ins})", "", "", "def get_inputs():"]
    for a in t.inputs:
        init = t.inits[a.name]
        out.append(f"    shape = ({', '.join(a.shape)},)")
        expr = INITS[init].format(dt=_dtype_name(a)) if init in INITS else init
        out.append(f"    {a.name} = {expr}")
    out += [f"    return [{ins}]", "", "", "def get_init_inputs():",
            f"    return [{', '.join(a.value for a in t.params)}]", ""]
    return "\n".join(out)


def load_c_task(path: str | Path, task_id: str | None = None, level: int | None = None) -> Task:
    """A `Task` from a `.c` file: `.source` is the generated program the harness runs; `.metadata["c_source"]`
    the C code shown to the agent, `["interface"]` its calling convention. `.level` is `level`, else the header's
    `level` (not written into the generated program, so adding one leaves `.source` and its manifest hash alone)."""
    path = Path(path)
    t = parse_c(path.read_text(), path.stem, str(path))
    task_id = task_id or str(path.resolve())
    task = parse_task(task_id, program(t), path, level if level is not None else t.meta.get("level"))
    meta = {**task.metadata, "c_source": t.code, "interface": interface(t), "has_baseline": "baseline" in t.meta}
    return replace(task, metadata=meta)


def load_c_tasks(directory: str | Path) -> list[Task]:
    """Every `.c` task in a directory (recursively; names starting with `_` or `.` skipped), ids = their paths.

    Pass the ids to the env as a task list: `gym.make("KernelRefine-v0", task=[t.id for t in tasks])`.
    """
    root = Path(directory)
    if not root.is_dir():
        raise TaskFormatError(f"{root} is not a directory")
    paths = [p for p in sorted(root.rglob("*.c"))
             if not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts)]
    return [load_c_task(p) for p in paths]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m kernel_gym.tasks.c_task FILE.c\n")
        return 2
    path = Path(args[0])
    sys.stdout.write(program(parse_c(path.read_text(), path.stem, str(path))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
