"""What a task's reference computes, in the terms of the `standard` preset's library policy (one place).

`standard` lets two kinds of PyTorch compute stay beside the solution's own kernels, each only where the task has
other work for the kernels to do:

- a library GEMM/convolution (``nn.Linear``, ``nn.Conv*``, ``torch.matmul``, cuBLAS/cuDNN from C++): only when the
  reference has a GEMM/convolution **and** other work to fuse. On a task whose reference is one GEMM or convolution
  (``level1/matmul``, ``level1/conv2d``) the library call would be the whole task, so it must be the solution's own
  kernel; on a task with no GEMM at all a library GEMM is a substitute (``x @ ones`` for a sum), never allowed.
- an epilogue reduction (``sum``/``mean``/``amax``/``amin``/``max``/``min`` of the kernel's small result, such as
  averaging per-row losses): only when the reference itself reduces (a reduction, a loss, a cosine similarity)
  and is not just reductions (``level1/sum_reduce``): on an elementwise task a reduction is no epilogue of the
  task's work.

Derived from the AST of the reference's ``Model.forward`` (for C-reference tasks, its PyTorch ``Baseline``), never
by running it. Unknown or unparsable sources get the answer from before this policy: a library GEMM/conv allowed
(beside an own kernel), an epilogue reduction not.

    >>> policy = task_policy(load_task("level1/matmul").source)
    >>> policy.library_gemm, policy.epilogue_reduction, policy.single_gemm
    (False, False, True)
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache

from .allowlists import NN_GEMM, NN_NONCOMPUTE, TENSOR_COMPUTE, TENSOR_GEMM, TENSOR_OK, TORCH_GEMM, torch_name_ok
from .astutil import Names

# Reductions a solution may leave as a small epilogue (Python method/torch function, C++ method/at:: function).
EPILOGUE_REDUCTIONS = frozenset({"sum", "mean", "amax", "amin", "max", "min"})
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

    @property
    def library_gemm(self) -> bool:
        """May a library GEMM/convolution stay under `standard`? Only beside other work of the reference."""
        return not self.known or (self.gemm > 0 and self.reduction + self.loss + self.other > 0)

    @property
    def epilogue_reduction(self) -> bool:
        """May a small reduction of the kernels' result stay under `standard`? Only where the reference reduces
        (a reduction or a loss) and is not reductions only."""
        return self.known and self.reduction + self.loss > 0 and self.gemm + self.loss + self.other > 0

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
        tree = ast.parse(source)
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
    return TaskPolicy(**counts)


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
