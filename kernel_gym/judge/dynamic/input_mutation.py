"""the forward must not write into its inputs (inputs are compared with clones after the call)"""

from __future__ import annotations

from kernel_gym.judge.dynamic.registry import Hack, check


@check("input_mutation", "call")
def after_call(ctx, called) -> None:
    """The judge's input buffers still hold the values it placed there (the judge's own comparison)."""
    if not called.inputs_intact:
        raise Hack("input_mutation", "forward() modified its input tensors; write results to new outputs")
