"""Peak GPU memory of a task's judged run, estimated without a GPU (shapes only, on the `meta` device).

The reference is traced as `roofline.trace_source` does; every tensor an ATen op creates is counted while it is
alive (views keep their base alive), which gives the forward's peak working memory (`activations`, its outputs
included). A judged run holds, at once:

    reference runner   params + inputs + activations                      (the eager reference)
    candidate runner   params + activations                               (a solution no hungrier than it)
    judge              2 x inputs + 2 x outputs                           (the shared inputs and their pristine
                                                                           copy; both sides' output buffers)
    float64 oracle     (8 / itemsize) x (params + inputs + activations)   (judge/oracle.py, on the reference runner)
    fixed              CONTEXT_MIB per process (judge and two runners) + the clock's L2-flush buffer

    peak_mib_estimate = the sum, at the larger of the full and full_alt sizes

It is an upper-side estimate of what `torch.cuda.max_memory_allocated` would report summed over the processes,
not a measurement: the caching allocator's fragmentation is not in it, and a solution that needs more working
memory than the eager reference raises it. `MEMORY_BOUND_MIB` is the bound the level-3 suite is sized for (a 24 GB
card with room to spare).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from kernel_gym.signals.roofline import tensor_bytes
from kernel_gym.tasks.loading import load_reference
from kernel_gym.tasks.roofline import build

MEMORY_BOUND_MIB = 20 * 1024
"""Every level-3 task's judged run fits in this at full size (issue #40: the cards people have)."""
CONTEXT_MIB = 512
"""What one CUDA context with torch loaded takes on an H100 (judge, reference runner, candidate runner)."""
L2_FLUSH_MIB = 256
"""The clock's L2-flush buffer (judge/clock.py)."""
_MIB = 2**20


@dataclass(frozen=True)
class Footprint:
    """Bytes of one forward at one size: parameters and buffers, inputs, outputs, and the peak of the tensors the
    forward creates (outputs included); `itemsize` is the bytes of one element of the task's floating dtype."""

    params: int
    inputs: int
    outputs: int
    activations: int
    itemsize: int

    @property
    def peak_bytes(self) -> int:
        reference = self.params + self.inputs + self.activations
        candidate = self.params + self.activations
        judge = 2 * self.inputs + 2 * self.outputs
        oracle = reference * 8 // self.itemsize
        return reference + candidate + judge + oracle + (3 * CONTEXT_MIB + L2_FLUSH_MIB) * _MIB

    @property
    def peak_mib(self) -> float:
        return self.peak_bytes / _MIB


class _LiveBytes(TorchDispatchMode):
    """Counts the bytes of the tensors ops create while they are alive; `peak` is the most at any time."""

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0

    def _free(self, nbytes: int) -> None:
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        seen = {id(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor) or id(t) in seen:
                continue  # an in-place op's result is its argument
            if func.is_view:
                t._kg_base = args[0]  # a view keeps its base's memory alive
                continue
            nbytes = tensor_bytes(t)
            self.live += nbytes
            self.peak = max(self.peak, self.live)
            weakref.finalize(t, self._free, nbytes)
        return out


def _bytes(values: Any) -> int:
    return sum(tensor_bytes(t) for t in tree_leaves(values) if isinstance(t, torch.Tensor))


def footprint(source: str, sizes: dict[str, Any] | None = None) -> Footprint:
    """The footprint of the reference `source` at `sizes` ({} = its full sizes), traced on the meta device."""
    with torch.device("meta"):
        module = load_reference(source, dict(sizes or {}))
        model, inputs = build(module)
        params = _bytes([*model.parameters(), *model.buffers()])
        floating = [t for t in [*inputs, *model.parameters()] if isinstance(t, torch.Tensor) and t.is_floating_point()]
        itemsize = floating[0].element_size() if floating else 4
        counter = _LiveBytes()
        with torch.no_grad(), counter:
            out = model(*inputs)
            peak = counter.peak
        outputs = _bytes(out)
        del out
    return Footprint(params=params, inputs=_bytes(inputs), outputs=outputs, activations=peak, itemsize=itemsize)


def peak_mib_estimate(source: str, full_alt: dict[str, Any] | None = None) -> float:
    """The estimated peak MiB of a judged run at the full sizes, or at `full_alt` where that is larger."""
    peaks = [footprint(source).peak_mib]
    if full_alt:
        peaks.append(footprint(source, full_alt).peak_mib)
    return round(max(peaks), 1)
