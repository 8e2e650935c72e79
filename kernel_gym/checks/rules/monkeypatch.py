"""Rule ``monkeypatch``: the solution must not alter torch, triton, timers, the harness or globals."""

from __future__ import annotations

import ast

from ..context import Context
from ..registry import rule, violation

NAME = "monkeypatch"
RNG = ("torch.manual_seed", "torch.seed", "torch.set_rng_state", "torch.random.", "torch.cuda.manual_seed",
       "torch.cuda.seed", "torch.cuda.set_rng_state", "numpy.random.seed", "random.seed", "random.setstate",
       "torch.use_deterministic_algorithms", "torch.set_default_dtype", "torch.set_default_device",
       "torch.set_default_tensor_type", "torch.set_flush_denormal", "torch.set_printoptions",
       "torch._C", "torch.overrides", "torch.library.Library", "torch.library.impl",
       "torch.library.register_kernel", "torch.library.register_torch_dispatch",
       "torch.utils._python_dispatch", "torch.Tensor._make_subclass", "torch.Tensor._make_wrapper_subclass",
       "torch.nn.modules.module.register_module_", "torch.nn.module.register_module_",
       "torch.nn.modules.module._global_", "torch.autograd.graph.register_", "torch._dynamo")
PATCH_MODULES = ("unittest.mock", "mock", "pytest", "kernel_gym", "builtins", "__builtin__")
ALLOWED_IMPORTS = ("kernel_gym.cuda_raw",)  # the raw-CUDA solution format's launcher (backend="cuda_raw")
FIX = "Remove it: the solution may only define kernels and ModelNew; global state is pinned by the harness."


DYNAMIC_ROOTS = ("type", "getattr", "vars", "globals", "locals", "__import__")
DISPATCH_BASES = ("torch.Tensor", "torch._C", "torch.overrides", "torch.utils._python_dispatch",
                  "torch._subclasses")
HOOKS = ("__torch_function__", "__torch_dispatch__")


def _root_alias(ctx: Context, node: ast.AST) -> str | None:
    """If ``node`` is an attribute/subscript chain rooted at an imported name (or at ``type(...)``,
    ``getattr(...)``, ``globals()``...), that root's name."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    if isinstance(node, ast.Name) and node.id == "__builtins__":
        return "builtins"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_ROOTS:
        return f"{node.func.id}(...)"
    return ctx.resolve(node) if isinstance(node, ast.Name) else None


@rule(NAME)
def check(ctx: Context):
    """No assignment, deletion or ``setattr`` on an imported module or anything reached through it
    (``torch.cuda.Event.elapsed_time = ...``, ``time.perf_counter = ...``, ``torch.backends.cudnn.*``,
    ``sys.modules[...] = ...``, ``triton.*``, ``builtins``); no import of ``kernel_gym`` (except
    ``kernel_gym.cuda_raw``, the raw-CUDA launcher),
    ``unittest.mock`` or ``builtins``; no reseeding or global-default changes (``torch.manual_seed``,
    ``torch.set_default_dtype``...); no operator overriding (``torch.library.Library``/``impl``,
    ``torch._C``, ``torch.overrides``); no ``torch.Tensor`` subclass and no ``__torch_function__``/
    ``__torch_dispatch__`` (lazy tensors that defer work until comparison)."""
    for node in ast.walk(ctx.tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for t in targets:
            for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                root = _root_alias(ctx, e) if isinstance(e, (ast.Attribute, ast.Subscript)) else None
                if root:
                    yield violation(NAME, node, f"`{ast.unparse(e)} = ...` modifies the imported module "
                                    f"`{root}` (monkeypatching). {FIX}")
        if isinstance(node, ast.Call):
            f = node.func
            r = ctx.resolve(f) or ""
            if isinstance(f, ast.Name) and f.id in ("setattr", "delattr") and node.args:
                root = _root_alias(ctx, node.args[0])
                if root:
                    yield violation(NAME, node, f"`{f.id}({ast.unparse(node.args[0])}, ...)` modifies the "
                                    f"imported module `{root}`. {FIX}")
            if r.startswith(RNG) and not r.startswith(("torch.random.get_", "torch._C._get")):
                yield violation(NAME, node, f"`{r}(...)` changes global torch/random state (seeds, "
                                f"defaults or operator registrations). {FIX}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [f"{node.module}.{a.name}" for a in node.names]
            for mod in mods:
                if mod == "torch._C" or mod.startswith("torch._C.") \
                        or any(mod == p or mod.startswith(p + ".") for p in PATCH_MODULES) \
                        and not any(mod == a or mod.startswith(a + ".") for a in ALLOWED_IMPORTS):
                    yield violation(NAME, node, f"importing `{mod}` is not allowed in a solution "
                                    f"(it exists to patch or inspect the harness). {FIX}")
        elif isinstance(node, ast.ClassDef):
            for b in node.bases:
                rb = ctx.resolve(b) or ""
                if rb.startswith(DISPATCH_BASES):
                    yield violation(NAME, node, f"`class {node.name}({ast.unparse(b)})` subclasses "
                                    f"{rb} (tensor subclass or dispatch mode); return plain tensors "
                                    "computed by your kernels.")
        elif isinstance(node, ast.FunctionDef) and node.name in HOOKS or (
                isinstance(node, ast.Attribute) and node.attr in HOOKS):
            what = node.name if isinstance(node, ast.FunctionDef) else node.attr
            yield violation(NAME, node, f"`{what}` intercepts torch operations (a lazy or fake tensor); "
                            "return plain tensors computed by your kernels.")
