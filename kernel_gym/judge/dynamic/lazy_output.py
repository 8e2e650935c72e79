"""outputs must be plain torch.Tensor objects, not subclasses that defer or fake work"""

from __future__ import annotations

from kernel_gym.judge.dynamic.registry import Hack, check


@check("lazy_output", "call")
def after_call(ctx, called) -> None:
    """Every output forward() returned is a plain torch.Tensor (the runner's evidence)."""
    if called.evidence.get("lazy"):
        i = called.evidence["lazy"][0]
        raise Hack("lazy_output", f"output {i} is a Tensor subclass; return a plain torch.Tensor with the values "
                   "computed")
