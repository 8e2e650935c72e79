"""What a reference does, read without a GPU: its ATen op sequence, bytes moved and FLOPs, and a roofline time.

The reference is run on the `meta` device (shapes only, no data, no memory), so even full H200 sizes trace in
milliseconds on a laptop. Every non-view ATen op the forward dispatches is recorded with the bytes of its tensor
arguments and results (an eager PyTorch reference runs one kernel per op, unfused) and `FlopCounterMode`'s FLOPs
(matmuls and convolutions). The estimate is

    estimate_ms = Σ_ops bytes / bandwidth + flops / flop_rate + launches · launch_overhead

with the H200's peaks from `kernel_gym.signals.hardware` (the one place GPU peaks are kept): its achievable copy
bandwidth (4.3 TB/s) and `SGEMM_FRACTION` of its fp32 CUDA-core peak (5/6 of 60 = 50 TFLOP/s, what cuBLAS sgemm
reaches with TF32 off), plus 2 µs a launch. A task whose inputs are bf16 or fp16 (level 3) gets the tensor-core roof
instead: `HALF_FRACTION` of the spec's dense bf16/fp16 peak (0.6 x 989 TFLOP/s, a guess until its baselines are
measured). Against the measured
references of the first suite (README.md) it lands within ~0.6-1.1x: memory-bound ops reach ~60-80 % of peak
bandwidth, so the estimate is a slight *under*-estimate there, which is the safe side for a "> 0.1 ms" filter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

from kernel_gym.signals.hardware import H200
from kernel_gym.signals.roofline import tensor_bytes
from kernel_gym.tasks.loading import load_reference

SPEC = H200
"""The GPU the estimates are for; its peaks live in `kernel_gym.signals.hardware` only."""
SGEMM_FRACTION = 5 / 6
"""The share of the fp32 (CUDA-core) FLOP peak an eager reference's matmuls and convolutions reach: cuBLAS sgemm
with TF32 off runs at ~50 of the H200's 60 TFLOP/s. Memory traffic uses the spec's bandwidth as is (it is already
the achievable copy bandwidth, not the datasheet's)."""
BANDWIDTH_BYTES_PER_S = SPEC.bandwidth  # 4.3e12: H200 HBM3e, device-to-device copy bandwidth
FLOPS_PER_S = SPEC.peak_flops("float32") * SGEMM_FRACTION  # 5.0e13: H200 fp32 without tensor cores (TF32 off)
HALF_FRACTION = 0.6
"""The share of the dense bf16/fp16 tensor-core peak an eager reference's matmuls reach (cuBLAS gets ~0.75 on large
square GEMMs; attention's smaller, batched ones less). Used for tasks whose inputs are bf16 or fp16."""
LAUNCH_S = 2e-6  # one eager kernel launch
MODEL = {"bandwidth_bytes_per_s": BANDWIDTH_BYTES_PER_S, "flops_per_s": FLOPS_PER_S, "launch_s": LAUNCH_S,
         "formula": "sum over ATen ops of bytes/bandwidth + flops/flops_per_s + launch_s"}

# Ops that move no data of their own (metadata, RNG state, allocation without a fill).
_HALF = ("bfloat16", "float16")

_FREE = {"detach", "empty", "empty_like", "empty_strided", "lift_fresh", "alias", "_to_copy_meta"}


@dataclass
class Trace:
    """The forward's ATen ops (names, in order), the bytes and FLOPs they move, and the inputs' size."""

    ops: list[str] = field(default_factory=list)
    bytes: int = 0
    flops: int = 0
    input_bytes: int = 0
    output_shapes: list[tuple[int, ...]] = field(default_factory=list)
    dtype: str = "float32"
    """The dtype of the first floating input: it picks the FLOP roof (`flop_rate`)."""

    @property
    def estimate_ms(self) -> float:
        seconds = self.bytes / BANDWIDTH_BYTES_PER_S + self.flops / flop_rate(self.dtype) + len(self.ops) * LAUNCH_S
        return seconds * 1e3

    @property
    def signature(self) -> tuple[str, ...]:
        """The operator sequence, as compared for duplicates (ops differing only in overload are the same)."""
        return tuple(self.ops)


def flop_rate(dtype: str) -> float:
    """The FLOP/s an eager reference of `dtype` reaches: `FLOPS_PER_S` for float32 (and anything else), the
    tensor-core roof times `HALF_FRACTION` for bfloat16 and float16."""
    return SPEC.peak_flops(dtype) * HALF_FRACTION if dtype in _HALF else FLOPS_PER_S


class _OpRecorder(TorchDispatchMode):
    def __init__(self, trace: Trace):
        super().__init__()
        self.trace = trace

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        if not func.is_view and name not in _FREE:
            seen: set[int] = set()
            for t in tree_leaves((args, kwargs, out)):
                if isinstance(t, torch.Tensor) and id(t) not in seen:
                    seen.add(id(t))
                    self.trace.bytes += tensor_bytes(t)
            self.trace.ops.append(name)
        return out


def build(module: Any, seed: int = 0) -> tuple[torch.nn.Module, list[Any]]:
    """`Model(*get_init_inputs())` right after `torch.manual_seed(seed)`, then `get_inputs()` (on the current device)."""
    torch.manual_seed(seed)
    model = module.Model(*module.get_init_inputs())
    return model, list(module.get_inputs())


def trace_source(source: str, sizes: dict[str, Any] | None = None, device: str = "meta") -> Trace:
    """Trace the reference `source` at `sizes` (size-global overrides; {} = its own full sizes) on `device`."""
    trace = Trace()
    with torch.device(device):
        module = load_reference(source, dict(sizes or {}))
        model, inputs = build(module)
        trace.input_bytes = sum(tensor_bytes(x) for x in inputs if isinstance(x, torch.Tensor))
        trace.dtype = next((str(x.dtype).removeprefix("torch.") for x in inputs
                            if isinstance(x, torch.Tensor) and x.is_floating_point()), "float32")
        flops = FlopCounterMode(display=False)
        with torch.no_grad(), flops, _OpRecorder(trace):
            out = model(*inputs)
    trace.flops = int(flops.get_total_flops())
    trace.output_shapes = [tuple(o.shape) for o in tree_leaves(out) if isinstance(o, torch.Tensor)]
    return trace


def estimate_ms(source: str, sizes: dict[str, Any] | None = None) -> float:
    """The roofline estimate of the reference's H200 time at `sizes` (its full sizes by default)."""
    return trace_source(source, sizes).estimate_ms
