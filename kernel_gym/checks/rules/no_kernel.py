"""Rule ``no_kernel``: the forward path must launch at least one of the solution's own kernels."""

from __future__ import annotations

from ..context import Context
from ..registry import rule, violation

NAME = "no_kernel"
HOW = ("a @triton.jit kernel launched as `kernel[grid](...)`, a function of a module built with "
       "torch.utils.cpp_extension.load_inline whose CUDA source defines a __global__ kernel, a @helion.kernel "
       "function with a `for tile in hl.tile(...)` loop, a @cute.jit function that launches a @cute.kernel "
       "(`kernel(...).launch(grid=..., block=...)`), or a compiled TileLang kernel (a @tilelang.jit factory's result, "
       "or tilelang.compile of a @T.prim_func)")
WANTED = {"triton": {"triton"}, "cuda": {"cuda"}, "cuda_raw": {"cuda"}, "helion": {"helion"},
          "cute_dsl": {"cute_dsl"}, "tilelang": {"tilelang"}}


@rule(NAME)
def check(ctx: Context):
    """ModelNew.forward, or a solution function or method it reaches, launches at least one own
    kernel: a ``@triton.jit`` function launched as ``kernel[grid](...)``, a function of a
    ``load_inline``-built module whose sources define a ``__global__`` kernel, or a ``@helion.kernel``
    function with a device loop (``for tile in hl.tile(...)``/``hl.grid(...)``: Helion makes a kernel of it; a Helion
    function without one is only PyTorch), a ``@cute.jit`` function (or its ``cute.compile`` result) that launches a
    ``@cute.kernel``, or a compiled TileLang kernel (``make(...)`` of a lazy ``@tilelang.jit`` factory,
    ``tilelang.compile(...)``, an eager ``@tilelang.jit`` function). A solution that is only PyTorch (or launches no
    kernel of the requested backend) is rejected in every preset."""
    if "ModelNew" not in ctx.classes:
        yield violation(NAME, None, "no `class ModelNew` found; define ModelNew(nn.Module) whose forward "
                        f"launches your own kernel ({HOW}).")
        return
    backend = (ctx.backend or "auto").lower()
    wanted = WANTED.get(backend, set().union(*WANTED.values()))
    kinds = {kind for _, kind, _ in ctx.launches}
    if kinds & wanted:
        return
    fwd = ctx.find_method("ModelNew", "forward")
    line = getattr(fwd[1], "lineno", None) if fwd else None
    if kinds:
        got = ", ".join(sorted(kinds))
        yield violation(NAME, line, f"the backend is `{backend}` but ModelNew.forward only launches {got} "
                        f"kernels; write the kernel for the `{backend}` backend.")
        return
    extra = ""
    if ctx.jit and not any(kind == "triton" for _, kind, _ in ctx.launches):
        extra = (f" (the @triton.jit kernel(s) {', '.join(sorted(ctx.jit))} are defined but never "
                 "launched from forward)")
    elif ctx.helion and not any(ctx.has_device_code(fn) for fn in ctx.helion.values()):
        extra = (f" (the @helion.kernel function(s) {', '.join(sorted(ctx.helion))} have no `for tile in hl.tile(...)` "
                 "loop, so Helion generates no kernel from them: the code outside that loop runs as plain PyTorch)")
    elif ctx.helion:
        extra = f" (the @helion.kernel function(s) {', '.join(sorted(ctx.helion))} are defined but never called from forward)"
    elif ctx.dsl.cute_kernels:
        extra = (f" (the @cute.kernel function(s) {', '.join(sorted(ctx.dsl.cute_kernels))} are not launched by a "
                 "@cute.jit function that forward calls: `kernel(...).launch(grid=..., block=...)` inside it)")
    elif ctx.dsl.tl_prims or ctx.dsl.tl_jit:
        extra = (f" (the TileLang function(s) {', '.join(sorted(set(ctx.dsl.tl_prims) | set(ctx.dsl.tl_jit)))} are "
                 "never compiled and called from forward: call the kernel a @tilelang.jit factory returns)")
    elif ctx.cpp and not ctx.has_global_kernel:
        extra = " (the C++ source defines no __global__ kernel)"
    yield violation(NAME, line, f"ModelNew.forward launches no kernel of its own{extra}. Every solution "
                    f"must compute in its own kernel: {HOW}. Pure-PyTorch solutions are rejected.")
