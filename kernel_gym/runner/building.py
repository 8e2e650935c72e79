"""Building a model in a runner: constructed right after seeding (KernelBench's convention: Model and ModelNew get
the same weights), cast to the job's precision, moved to the runner's device; and the float64 twin of a freshly
built reference that the judge's oracle uses (judge/oracle.py)."""

from __future__ import annotations

import copy
from typing import Any

import torch

from kernel_gym.runner.refusal import Refusal

CASTS = ("float64", "float32", "float16", "bfloat16")  # the precisions a model may be cast to


def _weight_itemsize(model: torch.nn.Module) -> int:
    """Bytes per element of the model's first floating weight (4 when it has none)."""
    for t in (*model.parameters(), *model.buffers()):
        if t.is_floating_point():
            return t.element_size()
    return 4


def _precision(step: str) -> torch.dtype:
    if step not in CASTS:
        raise Refusal("runtime_error", f"no such precision {step!r}")
    return getattr(torch, step)


def construct(module: Any, cls: str, init: list[Any], seed: int, device: torch.device, dtype: str | None = None,
              through: str | None = None) -> torch.nn.Module:
    """`cls` of `module` right after seeding, cast to `dtype` (the job's precision), or, for the judge's float64
    oracle, to `through` (the precision: the weights rounded as the reference's are) and float64, on `device`, in
    eval mode. Casts that narrow the weights run on the host before the copy to the device, casts that widen them
    after it (the oracle of a bf16 task copies 2 bytes an element, not 8; every cast rounds the same wherever it
    runs)."""
    torch.manual_seed(seed)
    model = getattr(module, cls)(*init)
    if not isinstance(model, torch.nn.Module):
        raise Refusal("runtime_error", f"{cls} must be a torch.nn.Module subclass")
    widen: list[torch.dtype] = []
    for step in (through, dtype):
        if step is not None:
            to = _precision(step)
            if widen or to.itemsize > _weight_itemsize(model):
                widen.append(to)
            else:
                model = model.to(to)
    model = model.to(device)
    for to in widen:
        model = model.to(to)
    return model.eval()


def twin(model: torch.nn.Module, dtype: str | None) -> tuple[torch.nn.Module | None, dict[str, Any]]:
    """A copy of a freshly built model (no call yet: the same weights and state a second seeded construction would
    have, without its time: a 128k-vocabulary head's weights take seconds to initialise on the host), cast to
    `dtype` on its device; with the reply for the judge (`ok`, or `error`: why not, and the judge builds it the
    usual way)."""
    try:
        copied = copy.deepcopy(model)
        return (copied.to(_precision(dtype)) if dtype is not None else copied).eval(), {"ok": True}
    except Exception as e:  # noqa: BLE001 - an uncopyable model (a lock, a handle): built again by the judge's ask
        return None, {"error": f"{type(e).__name__}: {e}"[:300]}
