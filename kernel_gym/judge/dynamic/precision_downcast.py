"""outputs must keep the task's dtype contract (no fp16/bf16/tf32 on fp32 tasks)"""

from __future__ import annotations

from kernel_gym.judge.dynamic.registry import Hack, check


@check("precision_downcast", "call")
def after_call(ctx, called) -> None:
    """No output is fp16/bf16 where the task's is fp32/fp64, unless the job allows lower precision."""
    if called.structure is not None and called.structure.kind == "downcast":
        raise Hack("precision_downcast", called.structure.where)
