"""Rule ``library_op``: PyTorch/library compute in the forward path."""

from __future__ import annotations

import ast
import re

from .. import cpp
from .. import library_policy as policy
from ..allowlists import (
    CPP_GEMM,
    CPP_OK,
    MODULE_SAFE_METHODS,
    NN_GEMM,
    NUMPY_OK,
    TENSOR_COMPUTE,
    TENSOR_GEMM,
    THIRD_PARTY,
    TORCH_GEMM,
    torch_name_ok,
)
from ..astutil import COMPILER_CALLS, call_name, is_super_call
from ..context import Context, FnRef
from ..registry import rule, violation
from ..task_policy import EPILOGUE_REDUCTIONS

NAME = "library_op"
CUDA_MATH = frozenset("""exp exp2 expm1 log log2 log10 log1p sqrt rsqrt pow abs max min floor ceil round trunc sin
cos tan sinh cosh tanh asin acos atan atan2 erf erfc erfinv lgamma fmod remainder hypot frexp ldexp copysign
signbit isnan isinf isfinite fmax fmin fma nextafter""".split())
_CUBLAS = re.compile(r"\b(?:cublas|cudnn)\w*(?=\s*\()")
_MODULE_WALKERS = ("children", "modules", "named_children", "named_modules", "get_submodule")
_MODULES = {"torch", "torch.nn", "torch.nn.functional", "torch.cuda", "torch.linalg", "torch.fft",
            "torch.special", "numpy", "triton", "triton.language", "operator", "math"}
_COMPILERS = COMPILER_CALLS + ("torch._dynamo", "torch._inductor", "torch.jit")
_VIEWS = frozenset({"to", "float", "view", "reshape", "contiguous", "squeeze", "unsqueeze", "flatten", "type_as"})


GEMM, EPILOGUE, COMPUTE = "gemm", "epilogue", "compute"  # what a finding is, for `standard`'s policy


def _finding(out, node_or_line, what: str, gemm: bool, where: str, note: str = "", epilogue: str = "",
             final: bool = False) -> None:
    """`epilogue`: the reduction's name when it may be a final reduction of the kernel's result (not of an input);
    `final`: its value is what forward returns (up to a scalar scaling), not fed to anything else."""
    out.append((node_or_line, what, note, GEMM if gemm else EPILOGUE if epilogue else COMPUTE, where, epilogue, final))


def _final_py(ctx: Context, fr: FnRef | None, call: ast.AST | None) -> bool:
    """Does this call's value reach a `return` of its function, through arithmetic (a scalar scaling: the op audit
    checks it is one), casts/views, or a name that a `return` uses?"""
    node = call
    while node is not None and fr is not None:
        parent = ctx.parents.get(node)
        if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Tuple)):
            node = parent
        elif isinstance(parent, ast.Attribute) and parent.attr in _VIEWS and isinstance(
                ctx.parents.get(parent), ast.Call):
            node = ctx.parents[parent]
        elif isinstance(parent, ast.Return):
            return True
        elif isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            return bool(names) and any(isinstance(r, ast.Return) and r.value is not None and any(
                isinstance(x, ast.Name) and x.id in names for x in ast.walk(r.value)) for r in ast.walk(fr.node))
        else:
            return False
    return False


def _cpp_final(text: str, first: int, line: int) -> bool:
    """C++: the reduction is on a `return` line, or assigned to a name a later `return` uses."""
    lines = cpp.strip(text).split("\n")
    i = line - first
    if not 0 <= i < len(lines):
        return False
    if re.search(r"\breturn\b", lines[i]):
        return True
    m = re.search(r"(\w+)\s*=(?!=)", lines[i])
    return bool(m) and bool(re.search(rf"\breturn\b[^;]*\b{m.group(1)}\b", "\n".join(lines[i + 1:])))


def _forward_findings(ctx: Context, fr: FnRef, out: list) -> None:
    where = f"in {ctx.qualname_of(fr)}"
    for n in ctx.walk(fr):
        parent = ctx.parents.get(n)
        is_func = isinstance(parent, ast.Call) and parent.func is n
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load) and not (
                isinstance(parent, ast.Attribute) and parent.value is n):
            r = ctx.resolve(n)
            if r:
                call = parent if is_func else None
                of_input = bool(call and call.args and _is_input(ctx, fr, call.args[0]))
                _resolved(ctx, n, r, is_func, where, out, of_input, fr)
                continue
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and fr.self_name \
                    and n.value.id == fr.self_name:
                info = ctx.attr_info(fr.owner, n.attr)
                if info and (info.torch_mods or info.torch_callable):
                    gemm = not info.torch_callable and info.torch_mods <= NN_GEMM
                    kind = info.torch_callable or "torch.nn." + "/".join(sorted(info.torch_mods))
                    _finding(out, n, f"self.{n.attr}", gemm, where, f"a {kind}")
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and not ctx.resolve(n.func):
            _method_call(ctx, fr, n, where, out)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr" \
                and len(n.args) >= 2:
            _getattr(ctx, fr, n, where, out)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.attr in ("_modules", "__dict__") \
                and n.value.id == fr.self_name:
            _module_walk(ctx, fr, n, f"self.{n.attr}", where, out)
        elif (isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult)) or (
                isinstance(n, ast.AugAssign) and isinstance(n.op, ast.MatMult)):
            _finding(out, n, "@", True, where, "the matrix-multiply operator, torch.matmul")


def _resolved(ctx: Context, n: ast.AST, r: str, is_func: bool, where: str, out: list, of_input: bool = False,
              fr: FnRef | None = None) -> None:
    root, last = r.split(".")[0], r.rsplit(".", 1)[-1]
    bad = False
    if r.startswith(_COMPILERS) or (not is_func and r in _MODULES):
        return  # compilers: reported once, by the module-wide scan; a bare module is not an op
    if root == "torch":
        if r.startswith("torch.ops."):
            ns = r.split(".")[2] if r.count(".") >= 2 else "aten"
            own = r.count(".") >= 3 and "::".join(r.split(".")[2:4]) in ctx.custom_ops
            bad = not own and (ns in ("aten", "prims") or not ctx.has_torch_library)
        else:
            bad = not torch_name_ok(r, call=is_func)
    elif root == "triton":
        bad = r.startswith("triton.ops")
    elif root in ("numpy", "np"):
        bad = is_func and last not in NUMPY_OK
    elif root == "operator":
        bad = last in ("matmul", "imatmul")
    if bad:
        reduction = is_func and root == "torch" and last in EPILOGUE_REDUCTIONS and not of_input
        _finding(out, n, r + ("(...)" if is_func else ""), r in TORCH_GEMM, where,
                 epilogue=last if reduction else "", final=reduction and _final_py(ctx, fr, ctx.parents.get(n)))


def _method_call(ctx: Context, fr: FnRef, n: ast.Call, where: str, out: list) -> None:
    recv, m = n.func.value, n.func.attr
    if isinstance(recv, ast.Name) and recv.id == fr.self_name and m in _MODULE_WALKERS:
        _module_walk(ctx, fr, n, f"self.{m}(...)", where, out)
    if (isinstance(recv, ast.Name) and (recv.id == fr.self_name or recv.id in ctx.classes)) \
            or is_super_call(recv) or ctx.is_ext_call(n):
        return
    if isinstance(recv, ast.Attribute) and isinstance(recv.value, ast.Name) and fr.self_name \
            and recv.value.id == fr.self_name:
        info = ctx.attr_info(fr.owner, recv.attr)
        if info and info.torch_mods:  # self.conv.forward(x), self.conv._conv_forward(...)
            if m not in MODULE_SAFE_METHODS:
                gemm = info.torch_mods <= NN_GEMM and m in ("forward", "__call__")
                _finding(out, n, f"self.{recv.attr}.{m}(...)", gemm, where)
            return
        if info and info.own:
            return
    if m in TENSOR_COMPUTE:
        reduction = m in EPILOGUE_REDUCTIONS and not _is_input(ctx, fr, recv)
        _finding(out, n, f"{call_name(n.func)}(...)", m in TENSOR_GEMM, where, f"the Tensor.{m} method",
                 epilogue=m if reduction else "", final=reduction and _final_py(ctx, fr, n))


def _getattr(ctx: Context, fr: FnRef, n: ast.Call, where: str, out: list) -> None:
    """``getattr(torch, "relu")`` is ``torch.relu``; ``getattr(self, "lin")`` is ``self.lin``."""
    obj, attr = n.args[0], n.args[1]
    name = attr.value if isinstance(attr, ast.Constant) and isinstance(attr.value, str) else None
    base = ctx.resolve(obj)
    if base and name:
        _resolved(ctx, n, f"{base}.{name}", True, where, out, fr=fr)
    elif base and base.split(".")[0] in ("torch", "numpy"):
        _finding(out, n, f"getattr({base}, ...)", False, where, "a dynamic lookup of a library op")
    elif isinstance(obj, ast.Name) and obj.id == fr.self_name:
        info = ctx.attr_info(fr.owner, name) if name else None
        if name is None:
            _module_walk(ctx, fr, n, "getattr(self, ...)", where, out)
        elif info and (info.torch_mods or info.torch_callable):
            _finding(out, n, f"getattr(self, {name!r})", False, where, "a torch.nn module or torch op")


def _module_walk(ctx: Context, fr: FnRef, n: ast.AST, what: str, where: str, out: list) -> None:
    """Dynamic access to submodules is flagged when the class holds torch.nn compute modules."""
    mods = {m for c in ctx.mro(fr.owner) for info in ctx.attrs[c].values() for m in info.torch_mods}
    if mods:
        _finding(out, n, what, False, where, "dynamic access to torch.nn modules " + "/".join(sorted(mods)))


def _module_findings(ctx: Context, out: list) -> None:
    for node in ast.walk(ctx.tree):
        mods: list[str] = []
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            mods = [node.module]
        for mod in mods:
            if mod.split(".")[0] in THIRD_PARTY:
                _finding(out, node, f"import {mod}", False, "", "a third-party kernel library")
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            r = ctx.resolve(node) or ""
            if r.startswith(_COMPILERS) and not r.startswith(("torch.jit.is_", "torch.jit.annotate")):
                parent = ctx.parents.get(node)
                if not (isinstance(parent, ast.Attribute) and parent.value is node):
                    _finding(out, node, r, False, "", "compiler-generated kernels are not your own")
    for mod, line in ctx.names.star_imports:
        if mod.split(".")[0] in ("torch", "numpy") or mod.split(".")[0] in THIRD_PARTY:
            _finding(out, line, f"from {mod} import *", False, "", "it hides which library ops are used")


def _cpp_findings(ctx: Context, out: list) -> None:
    for text, first in ctx.cpp:
        for full, last, line in cpp.namespaced_calls(text, first):
            if last not in CPP_OK:
                reduction = last in EPILOGUE_REDUCTIONS
                _finding(out, line, f"{full}(...)", last in CPP_GEMM, "in the C++ source",
                         epilogue=last if reduction else "", final=reduction and _cpp_final(text, first, line))
        for name, line in cpp.search(_CUBLAS, text, first):
            _finding(out, line, f"{name}(...)", True, "in the C++ source", "cuBLAS/cuDNN")
        if cpp.uses_namespace(text):  # using namespace torch; ... matmul(a, b)
            for name, line in cpp.plain_calls(text, first):
                if name in (TENSOR_COMPUTE | CPP_GEMM) - CUDA_MATH:
                    reduction = name in EPILOGUE_REDUCTIONS
                    _finding(out, line, f"{name}(...)", name in CPP_GEMM or name in TENSOR_GEMM,
                             "in the C++ source", "a torch op through `using namespace`",
                             epilogue=name if reduction else "", final=reduction and _cpp_final(text, first, line))
        for m, line in cpp.method_calls(text, first):
            if m in TENSOR_COMPUTE:
                reduction = m in EPILOGUE_REDUCTIONS
                _finding(out, line, f".{m}(...)", m in TENSOR_GEMM, "in the C++ source", "a Tensor method",
                         epilogue=m if reduction else "", final=reduction and _cpp_final(text, first, line))


def _is_input(ctx: Context, fr: FnRef, recv: ast.AST) -> bool:
    """Is ``recv`` one of ModelNew.forward's own inputs (a reduction of an input is the work, not an epilogue)?"""
    if not (isinstance(recv, ast.Name) and fr.qualname.startswith("ModelNew.")):
        return False
    args = getattr(fr.node, "args", None)
    return args is not None and recv.id in {a.arg for a in args.args + args.kwonlyargs}


def _allowed(ctx: Context, kind: str, has_kernel: bool, op: str = "", final: bool = False) -> bool:
    """The library policy (kernel_gym.checks.library_policy) on this finding: under `standard`, when forward also
    launches an own kernel, a library GEMM/conv beside other work of the task, or a final reduction of the kernel's
    result that the reference ends in."""
    if kind == GEMM:
        return has_kernel and policy.LIBRARY_GEMM in policy.allowed(ctx.preset.library, ctx.task)
    if kind == EPILOGUE:
        return has_kernel and final and policy.final_reduction_ok(op, ctx.preset.library, ctx.task)
    return False


# (what "your own kernel" is, what "your own kernels" are) in a language whose host code runs as PyTorch
_OWN_WORDS = {
    "helion": ("your own Helion kernel (inside its `for tile in hl.tile(...)` loop: code outside that loop runs as "
               "plain PyTorch)", "Helion kernels' hl.tile loops"),
    "cute_dsl": ("your own CuTe DSL kernel (the body of a @cute.kernel: a @cute.jit function's own code runs as plain "
                 "Python/PyTorch while it is traced)", "@cute.kernel functions"),
    "tilelang": ("your own TileLang kernel (the body of a @T.prim_func: a @tilelang.jit factory's own code runs as "
                 "plain Python/PyTorch)", "TileLang @T.prim_func kernels"),
}


def _own_kernel_words(ctx: Context) -> tuple[str, str]:
    lang = ctx.backend if ctx.backend in _OWN_WORDS else "helion" if ctx.helion else \
        "cute_dsl" if ctx.dsl.cute_kernels or ctx.dsl.cute_jit else "tilelang" if ctx.dsl else None
    return _OWN_WORDS.get(lang, ("your own Triton/CUDA kernel", "Triton/CUDA kernels"))


def _message(ctx: Context, what: str, where: str, kind: str, has_kernel: bool, op: str = "",
             final: bool = False) -> str:
    """Why the finding is not allowed, then the policy's own sentence (the op audit's feedback quotes the same)."""
    own, kernels = _own_kernel_words(ctx)
    preset = ctx.preset.library
    if preset != "standard":
        return (f"`{what}`{where} is PyTorch/library compute; the `{ctx.preset.name}` preset requires every "
                f"computation in forward to run in your own {kernels}. Write it as a kernel. "
                + policy.explain(preset))
    if kind == GEMM:
        if ctx.task.single_gemm:
            why = (f"`{what}`{where} is a GEMM/convolution library call, and this task's reference is that "
                   "GEMM/convolution and nothing else: the library call would be the whole task. Write the "
                   f"GEMM/convolution as {own} (tile it; on fp32 keep full precision, e.g. "
                   "tl.dot(..., input_precision=\"ieee\")).")
        elif not ctx.task.library_gemm:
            why = (f"`{what}`{where} is a GEMM/convolution library call, but this task's reference has no "
                   f"GEMM/convolution to keep: it would do the task's work in the library. Compute it in {own}.")
        else:
            why = (f"`{what}`{where} is a GEMM/convolution library call, but forward launches no kernel of yours "
                   "(a @triton.jit launch, a load_inline CUDA kernel, a Helion kernel's hl.tile loop, a CuTe DSL or "
                   "a TileLang kernel) to do the rest of the work.")
        return why + " " + policy.explain(preset, {"gemm"})
    if kind == EPILOGUE:
        if not ctx.task.final_reductions and ctx.task.known and ctx.task.ends_in:
            why = f"`{what}`{where} is a library reduction, and this task's reference is reductions only: it would " \
                  "be the whole task."
        elif op not in ctx.task.final_reductions and ctx.task.known:
            why = f"`{what}`{where} is a library reduction, and this task's reference does not end in it."
        elif not final:
            why = (f"`{what}`{where} is a library reduction whose result is not forward's output (it feeds other "
                   "work): only the final step of your kernel's result may stay.")
        else:
            why = f"`{what}`{where} is a library reduction, but forward launches no kernel of yours that does the work."
        return f"{why} Write it in {own}. " + policy.explain(preset, {"reduction"})
    return (f"`{what}`{where} is PyTorch/library compute left outside your kernels. Do this op in {own}, ideally "
            "fused into the kernel that produces its input (e.g. as the GEMM's epilogue). " + policy.explain(preset))


@rule(NAME)
def check(ctx: Context):
    """Every computation in ModelNew.forward, and in every solution function it reaches, runs in the
    solution's own kernels: calls into torch/torch.nn.functional, compute methods of tensors
    (``x.sum()``, ``x.exp()``), the ``@`` operator, torch.nn compute modules held in ``self``
    (``self.linear(x)``), torch.compile, third-party kernel libraries and torch::/at::/cuBLAS/cuDNN
    compute in C++ sources are flagged. Allocation (torch.empty*/zeros*/full*), views, shape/dtype
    queries, copies, casts, torch.cuda queries, triton.cdiv/next_power_of_2 and kernel launches are
    allowed. Reading a module's parameters (``self.linear.weight``) is allowed; code that only runs when
    a helper module is built (its ``__init__``: ``nn.init.*``) is not on the forward path. Under ``standard``,
    when forward also launches an own kernel: the GEMM/convolution (nn.Linear, nn.Conv*,
    torch.matmul/mm/bmm/addmm/baddbmm, F.linear, F.conv*, ``@``, cuBLAS/cuDNN) may stay a library call if the
    task's reference has a GEMM/convolution and other work to fuse (a single-GEMM/conv task must be the
    solution's own kernel); a reduction (sum/mean/amax/amin/max/min, Python or C++) of a tensor other than
    forward's own inputs may stay as the final step (its value is what forward, or the C++ wrapper, returns, up to
    a scalar scaling) when the task's reference ends in that reduction and is not reductions only. The policy and
    its wording are data (kernel_gym.checks.library_policy), shared with the op audit and the profiler share; that
    such a reduction reads only the kernel's result is judged dynamically (op audit)."""
    out: list = []
    for fr in ctx.forward:
        _forward_findings(ctx, fr, out)
    _module_findings(ctx, out)
    _cpp_findings(ctx, out)
    has_kernel = bool(ctx.launches)
    seen = set()
    for node, what, note, kind, where, op, final in out:
        line = node if isinstance(node, int) else getattr(node, "lineno", None)
        if (line, what) in seen or _allowed(ctx, kind, has_kernel, op, final):
            continue
        seen.add((line, what))
        where = (f" ({note})" if note else "") + (f" {where}" if where else "")
        yield violation(NAME, line, _message(ctx, what, where, kind, has_kernel, op, final))
