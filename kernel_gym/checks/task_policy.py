"""What a task's reference computes, in the terms of the `standard` preset's library policy (one place).

`standard` lets two kinds of PyTorch compute stay beside the solution's own kernels, each only where the task has
other work for the kernels to do:

- a library GEMM/convolution (``nn.Linear``, ``nn.Conv*``, ``torch.matmul``, cuBLAS/cuDNN from C++): only when the
  reference has a GEMM/convolution **and** other work to fuse. On a task whose reference is one GEMM or convolution
  (``level1/matmul``, ``level1/conv2d``) the library call would be the whole task, so it must be the solution's own
  kernel; on a task with no GEMM at all a library GEMM is a substitute (``x @ ones`` for a sum), never allowed.
- a final reduction of the kernel's result (``sum``/``mean``/``amax``/``amin``/``max``/``min``, such as averaging
  per-row losses, and a scalar scaling of it): only when the reference itself ends in that reduction (its returned
  value is a sum/mean, a max/amax or a min/amin, up to a sign or a scalar factor; a loss such as cross-entropy, MSE,
  Huber or KL counts as a sum/mean) and is not just reductions (``level1/sum_reduce``): on an elementwise task a
  reduction is no part of the task's work, on a reductions-only task it is all of it.

Derived from the AST of the reference's ``Model.forward`` (for C-reference tasks, its PyTorch ``Baseline``), never
by running it. Unknown or unparsable sources get the answer from before this policy: a library GEMM/conv allowed
(beside an own kernel), an epilogue reduction not.

    >>> policy = task_policy(load_task("level1/matmul").source)
    >>> policy.library_gemm, policy.epilogue_reduction, policy.single_gemm
    (False, False, True)
    >>> sorted(task_policy(load_task("level1/mse_loss").source).final_reductions)
    ['mean', 'sum']

The policy's wording, and which library ops, kernels and presets each allowance covers, are data in
`kernel_gym.checks.library_policy`: the static rule, the op audit and the profiler share read it from there.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache

from kernel_gym.pyast import parse_source

from .allowlists import NN_GEMM, NN_NONCOMPUTE, TENSOR_COMPUTE, TENSOR_GEMM, TENSOR_OK, TORCH_GEMM, torch_name_ok
from .astutil import Names

# Reductions a solution may leave as the final step (Python method/torch function, C++ method/at:: function).
EPILOGUE_REDUCTIONS = frozenset({"sum", "mean", "amax", "amin", "max", "min"})
# What a reference's final reduction lets a solution end in: a mean is a sum and a scaling, a max an amax.
FAMILIES = {"sum": frozenset({"sum", "mean"}), "mean": frozenset({"sum", "mean"}), "nansum": frozenset({"sum", "mean"}),
            "nanmean": frozenset({"sum", "mean"}), "amax": frozenset({"amax", "max"}), "max": frozenset({"amax", "max"}),
            "amin": frozenset({"amin", "min"}), "min": frozenset({"amin", "min"})}
# Reductions in a reference (its output has fewer elements than its input along the reduced dims).
_REDUCTIONS = EPILOGUE_REDUCTIONS | {"prod", "var", "std", "var_mean", "std_mean", "logsumexp", "norm", "argmax",
                                     "argmin", "nansum", "nanmean", "count_nonzero", "all", "any", "median", "mode"}
# Other ops that reduce (losses, similarities): a reference with one of them reduces too.
_REDUCING = frozenset({"cross_entropy", "kl_div", "cosine_similarity", "pairwise_distance", "nll_loss",
                       "binary_cross_entropy", "binary_cross_entropy_with_logits", "poisson_nll_loss"})
_FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
# GEMM-like torch functions beside TORCH_GEMM (the op audit's LIBRARY_GEMM has their aten ops)
_GEMM_LIKE = frozenset({"dot", "mv", "einsum", "tensordot", "inner", "vdot", "linalg.matmul", "linalg.vecdot"})
_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


@dataclass(frozen=True)
class TaskPolicy:
    """What the reference's forward computes, and so what `standard` lets a solution leave to PyTorch."""

    gemm: int = 0
    """GEMM/convolution ops (nn.Linear/Conv*, torch.matmul/bmm/conv*, ``@``)."""
    reduction: int = 0
    """Reductions (sum, mean, amax, var, logsumexp, ...)."""
    loss: int = 0
    """Other ops that reduce their input (losses, cosine similarity)."""
    other: int = 0
    """Every other compute op (activations, norms, arithmetic, ...)."""
    known: bool = True
    """False when the source could not be analysed (then everything `standard` ever allowed stays allowed)."""
    ends_in: frozenset[str] = frozenset()
    """The reductions the reference's returned value ends in (a loss counts as sum/mean), as a solution may end."""

    @property
    def library_gemm(self) -> bool:
        """May a library GEMM/convolution stay under `standard`? Only beside other work of the reference."""
        return not self.known or (self.gemm > 0 and self.reduction + self.loss + self.other > 0)

    @property
    def final_reductions(self) -> frozenset[str]:
        """The reductions a solution may leave as the final step of its kernel's result under `standard`: those the
        reference ends in, unless the reference is reductions only (then the reduction is the whole task)."""
        if not self.known or self.gemm + self.loss + self.other == 0:
            return frozenset()
        return self.ends_in

    @property
    def epilogue_reduction(self) -> bool:
        """May a final reduction of the kernels' result stay under `standard`? (`final_reductions` is not empty.)"""
        return bool(self.final_reductions)

    @property
    def single_gemm(self) -> bool:
        """The reference is GEMM/convolution and nothing else (its own kernel must be the GEMM/convolution)."""
        return self.known and self.gemm > 0 and self.reduction + self.loss + self.other == 0


PERMISSIVE = TaskPolicy(known=False)


@lru_cache(maxsize=512)
def task_policy(source: str | None) -> TaskPolicy:
    """The policy for a task's reference source (a KernelBench-format file); `PERMISSIVE` when unknown."""
    if not source:
        return PERMISSIVE
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError):
        return PERMISSIVE
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    cls = classes.get("Baseline") if "Baseline" in classes and _is_c_model(classes.get("Model")) \
        else classes.get("Model")
    forward = next((s for s in cls.body if isinstance(s, _FUNC_TYPES) and s.name == "forward"), None) if cls else None
    if forward is None:
        return PERMISSIVE
    counts = {"gemm": 0, "reduction": 0, "loss": 0, "other": 0}
    names, modules = Names(tree), _nn_modules(cls, Names(tree))
    for node in ast.walk(forward):
        kind = _kind(node, names, modules)
        if kind:
            counts[kind] += 1
    return TaskPolicy(**counts, ends_in=_ends_in(forward, names, modules))


def _ends_in(forward: ast.AST, names: Names, modules: dict[str, str]) -> frozenset[str]:
    """The reductions every `return` of forward ends in (through a sign, a scalar factor or offset, and names
    assigned in forward); empty when one return ends otherwise."""
    assigned: dict[str, ast.expr] = {}
    for n in ast.walk(forward):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            assigned[n.targets[0].id] = n.value
    found: frozenset[str] | None = None
    for ret in (n for n in ast.walk(forward) if isinstance(n, ast.Return) and n.value is not None):
        family = _final_of(ret.value, names, modules, assigned, 0)
        found = family if found is None else found & family
    return found or frozenset()


def _scalar(e: ast.expr, assigned: dict[str, ast.expr]) -> bool:
    """A number rather than a tensor: a constant, an attribute of self (`self.scale`), a size (`x.shape[1]`), a name
    forward does not compute, or arithmetic of those."""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, (int, float))
    if isinstance(e, ast.UnaryOp):
        return _scalar(e.operand, assigned)
    if isinstance(e, ast.BinOp):
        return _scalar(e.left, assigned) and _scalar(e.right, assigned)
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name):
        return e.value.id == "self"
    if isinstance(e, ast.Subscript):
        return isinstance(e.value, ast.Attribute) and e.value.attr == "shape"
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute):
        return e.func.attr in ("size", "numel", "dim")
    return isinstance(e, ast.Name) and e.id not in assigned and e.id[:1].isupper()  # a module constant (BATCH)


def _final_of(e: ast.expr, names: Names, modules: dict[str, str], assigned: dict[str, ast.expr],
              depth: int) -> frozenset[str]:
    if depth > 8:
        return frozenset()
    if isinstance(e, ast.UnaryOp):
        return _final_of(e.operand, names, modules, assigned, depth + 1)
    if isinstance(e, ast.BinOp) and isinstance(e.op, _ARITH):  # a scalar factor or offset: `-(...).sum(1)`, `s / n`
        if _scalar(e.right, assigned):
            return _final_of(e.left, names, modules, assigned, depth + 1)
        if _scalar(e.left, assigned):
            return _final_of(e.right, names, modules, assigned, depth + 1)
        return frozenset()
    if isinstance(e, ast.Name) and e.id in assigned:
        return _final_of(assigned.pop(e.id), names, modules, assigned, depth + 1)
    if not isinstance(e, ast.Call):
        return frozenset()
    f, r = e.func, names.resolve(e.func) or ""
    last = r.rsplit(".", 1)[-1] if r.startswith("torch.") else f.attr if isinstance(f, ast.Attribute) else ""
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" and f.attr in modules:
        last = modules[f.attr]
        return FAMILIES["sum"] if last.endswith("Loss") else frozenset()
    if last in FAMILIES:
        return FAMILIES[last]
    if last in _REDUCING or last.endswith("_loss"):
        return FAMILIES["sum"]
    return frozenset()


def _is_c_model(cls: ast.ClassDef | None) -> bool:
    return cls is not None and any(isinstance(b, ast.Name) and b.id == "CModel" for b in cls.bases)


def _nn_modules(cls: ast.ClassDef, names: Names) -> dict[str, str]:
    """``self.X = nn.Y(...)`` in the class: X -> Y."""
    out: dict[str, str] = {}
    for n in ast.walk(cls):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            r = names.resolve(n.value.func) or ""
            for t in n.targets:
                if isinstance(t, ast.Attribute) and r.startswith("torch.nn."):
                    out[t.attr] = r.rsplit(".", 1)[-1]
    return out


def _kind(node: ast.AST, names: Names, modules: dict[str, str]) -> str | None:
    """'gemm', 'reduction', 'loss', 'other' or None (not compute) for one node of the reference's forward."""
    if isinstance(node, ast.BinOp):
        return "gemm" if isinstance(node.op, ast.MatMult) else "other" if isinstance(node.op, _ARITH) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and not isinstance(node.operand, ast.Constant):
        return "other"
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    r = names.resolve(f)
    if r:
        last = r.rsplit(".", 1)[-1]
        if r in TORCH_GEMM or r.split(".", 1)[-1] in _GEMM_LIKE:
            return "gemm"
        if torch_name_ok(r, call=True) or not r.startswith("torch."):
            return None
        return _named(last)
    if isinstance(f, ast.Attribute):
        if isinstance(f.value, ast.Name) and f.value.id == "self" and f.attr in modules:
            mod = modules[f.attr]
            return "gemm" if mod in NN_GEMM else None if mod in NN_NONCOMPUTE else \
                "loss" if mod.endswith(("Loss", "Similarity", "Distance")) else "other"
        if f.attr in TENSOR_GEMM or f.attr in _GEMM_LIKE:
            return "gemm"
        if f.attr in TENSOR_COMPUTE and f.attr not in TENSOR_OK:
            return _named(f.attr)
    return None


def _named(name: str) -> str:
    if name in _REDUCTIONS:
        return "reduction"
    return "loss" if name in _REDUCING or name.endswith("_loss") else "other"
