"""with the solution's own launches skipped (Triton, raw CUDA, Helion, CuTe DSL, TileLang) the output must change;
otherwise the kernels do no work"""

from __future__ import annotations

from kernel_gym.judge.dynamic.registry import Hack, Stop, check


@check("decoy_kernel", "correctness",
       applies=lambda ctx: ctx.backend in ("triton", "cuda_raw", "helion", "cute_dsl", "tilelang"))
def ablation(ctx, _) -> None:
    """With every launch of the solution's own kernels skipped, the output must change."""
    try:
        mismatch = ctx.trial("ablation", strict=False, oracle=False, ablate=True)
    except Stop:  # a solution that breaks without its kernels relies on them
        mismatch = "raised"
    if mismatch is None:
        raise Hack("decoy_kernel", "the output stays correct when the solution's own kernels are skipped, so the "
                   "result is computed some other way; compute it in your kernels")
