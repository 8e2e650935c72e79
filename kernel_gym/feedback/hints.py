"""Plain hints added to the feedback of an honest failure: what most likely went wrong and how to fix it.

A hint reads the candidate's code and its result; it never changes the verdict or the score and never calls a
mistake a hack. Registered in `HINTS` (name -> function returning the hint text or None).

- `tf32_dot`: a WRONG OUTPUT on a float32 task from Triton code whose `tl.dot` runs in TF32 (Triton's default for
  fp32 inputs: about 10 mantissa bits, errors near 1e-3, above the fp32 tolerance) — pass
  `input_precision="ieee"`.
- `helion_tf32_dot`: the same for a Helion kernel with a matmul in its code: Helion's dots are TF32 on fp32 inputs
  unless the kernel says `dot_precision="ieee"`.
- `helion_config`: a Helion kernel given no config: this environment does not autotune (HELION_DISALLOW_AUTOTUNING).
- `helion_missing`: the runners' Python has no Helion (the machine's install, not the solution, is at fault).
- `helion_cpu_math`: on the CPU backend, a libdevice function that Helion lowered a torch op to and that CPU runners
  do not emulate (harness/interpreter_math.py) returns None under Triton's interpreter.
- CuTe DSL and TileLang: `kernel_gym.feedback.hints_dsl`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.pyast import parse_source


@dataclass(frozen=True)
class HintContext:
    """What a hint may look at besides the result."""

    code: str | None
    dtype: str = "float32"
    allow_precision: bool = False


HintFn = Callable[[EvalResult, HintContext], "str | None"]
HINTS: dict[str, HintFn] = {}


def hint(name: str) -> Callable[[HintFn], HintFn]:
    def deco(fn: HintFn) -> HintFn:
        if name in HINTS:
            raise ValueError(f"hint {name!r} registered twice")
        HINTS[name] = fn
        return fn

    return deco


def hints_for(result: EvalResult, ctx: HintContext) -> list[str]:
    """Every registered hint that applies, in registration order."""
    return [text for fn in HINTS.values() if (text := fn(result, ctx))]


def _tl_names(tree: ast.Module) -> set[str]:
    """Local names of triton.language (``tl``) and of ``triton.language.dot`` itself."""
    names = {"tl"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name == "triton.language" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "triton.language":
            names |= {"@" + (a.asname or a.name) for a in node.names if a.name == "dot"}
    return names


def _is_dot(call: ast.Call, names: set[str]) -> bool:
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr == "dot":
        v = f.value
        return (isinstance(v, ast.Name) and v.id in names) or (
            isinstance(v, ast.Attribute) and v.attr == "language" and isinstance(v.value, ast.Name)
            and v.value.id == "triton")
    return isinstance(f, ast.Name) and "@" + f.id in names


def _full_precision(call: ast.Call) -> bool:
    for kw in call.keywords:
        value = kw.value.value if isinstance(kw.value, ast.Constant) else None
        if kw.arg == "input_precision" and value in ("ieee", "tf32x3"):
            return True
        if kw.arg == "allow_tf32" and value is False:
            return True
    return False


def tf32_dot_lines(code: str) -> list[int]:
    """Lines of `tl.dot` calls that run in TF32 on fp32 inputs (no `input_precision="ieee"` / `allow_tf32=False`)."""
    try:
        tree = parse_source(code)
    except (SyntaxError, ValueError):
        return []
    names = _tl_names(tree)
    return sorted({n.lineno for n in ast.walk(tree)
                   if isinstance(n, ast.Call) and _is_dot(n, names) and not _full_precision(n)})


@hint("tf32_dot")
def _tf32_dot(result: EvalResult, ctx: HintContext) -> str | None:
    if result.outcome is not Outcome.MISMATCH or ctx.dtype != "float32" or ctx.allow_precision or not ctx.code:
        return None
    lines = tf32_dot_lines(ctx.code)
    if not lines:
        return None
    where = ", ".join(str(n) for n in lines)
    return ("`tl.dot` on float32 inputs runs in TF32 by default in Triton (about 10 mantissa bits, errors near "
            "1e-3), which is outside this float32 task's tolerance. Pass `input_precision=\"ieee\"` to the "
            f"`tl.dot` call(s) on line {where} to keep full fp32 precision (a precision fix, not a rule violation).")


_HELION_DOTS = ("matmul", "mm", "bmm", "addmm", "baddbmm", "dot")


def _helion_dot_without_ieee(code: str) -> bool:
    """A Helion solution with a matmul (torch.matmul/mm/bmm/addmm/baddbmm, hl.dot, `@`) and no dot_precision="ieee"."""
    try:
        tree = parse_source(code)
    except (SyntaxError, ValueError):
        return False
    if "helion" not in code or any(isinstance(n, ast.keyword) and n.arg == "dot_precision" and isinstance(
            n.value, ast.Constant) and n.value.value == "ieee" for n in ast.walk(tree)):
        return False
    return any((isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _HELION_DOTS)
               or (isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult)) for n in ast.walk(tree))


@hint("helion_tf32_dot")
def _helion_tf32_dot(result: EvalResult, ctx: HintContext) -> str | None:
    if result.outcome is not Outcome.MISMATCH or ctx.dtype != "float32" or ctx.allow_precision or not ctx.code \
            or not _helion_dot_without_ieee(ctx.code):
        return None
    return ("Helion runs the matmuls of a kernel in TF32 on float32 inputs by default (about 10 mantissa bits), "
            "outside this float32 task's tolerance: pass `dot_precision=\"ieee\"` to `@helion.kernel(...)` "
            "(a precision fix, not a rule violation).")


@hint("helion_config")
def _helion_config(result: EvalResult, ctx: HintContext) -> str | None:
    if result.outcome is not Outcome.COMPILE_ERROR or "Autotuning is disabled" not in (result.message or ""):
        return None
    return ("This environment does not autotune Helion kernels: give each one a fixed config, e.g. "
            "`@helion.kernel(config=helion.Config(block_sizes=[64, 64]))` (one block size per `hl.tile` dimension, "
            "in order), or `autotune_effort=\"none\"` for Helion's default config.")


@hint("helion_missing")
def _helion_missing(result: EvalResult, ctx: HintContext) -> str | None:
    if result.outcome is not Outcome.COMPILE_ERROR or "No module named 'helion'" not in (result.message or ""):
        return None
    return ("Helion is not installed where this environment runs solutions (`pip install 'kernel-gym[helion]'`); "
            "this is no fault of the solution.")


@hint("helion_cpu_math")
def _helion_cpu_math(result: EvalResult, ctx: HintContext) -> str | None:
    message = result.message or ""
    if result.outcome is not Outcome.COMPILE_ERROR or "InterpreterError" not in message or "None" not in message \
            or not ctx.code or "helion" not in ctx.code:
        return None
    return ("On the CPU backend Triton runs under its interpreter, which has no libdevice math of its own: Helion "
            "lowers some torch ops to libdevice functions, and one this environment does not emulate on CPU reads as "
            "None (exp, exp2, tanh, erf, rsqrt and the usual math are emulated). On a GPU it compiles; here "
            "write that op another way, or evaluate on a GPU.")


from kernel_gym.feedback import hints_dsl, hints_torch_api  # noqa: E402,F401 - register their hints
