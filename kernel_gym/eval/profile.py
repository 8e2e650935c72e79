"""GPU-time share of the candidate's own kernels, from the torch profiler (cuda only).

Own kernels are the Triton kernels the launch hooks saw and the `__global__` functions of the extensions the
worker built. Everything else (cuBLAS, cuDNN, ATen elementwise kernels) is library time. A solution whose own
kernels carry almost none of the GPU time is a decoy or a library call behind a custom kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# Minimum share of kernel time in the solution's own kernels, by anti-hack preset. `standard` and `permissive`
# allow library GEMMs/convs, which can dominate legitimately (a 4096^3 GEMM dwarfs its fused epilogue).
MIN_OWN_SHARE = {"strict": 0.5, "kevin-strict": 0.5, "standard": 0.02, "permissive": 0.02}


def own_share(fn: Callable[[], Any], own_names: set[str]) -> tuple[float, float, list[str]]:
    """Run fn under the profiler; (own share of kernel time, total kernel ms, top library kernel names)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    own = total = 0.0
    library: dict[str, float] = {}
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = event.name
        if name.startswith(("Memcpy", "Memset", "[memory]")):
            continue
        us = float(getattr(event, "device_time", None) or getattr(event, "cuda_time", 0.0) or 0.0)
        total += us
        if any(n and n in name for n in own_names):
            own += us
        else:
            library[name] = library.get(name, 0.0) + us
    top = [n for n, _ in sorted(library.items(), key=lambda kv: -kv[1])[:3]]
    return (own / total if total > 0 else 1.0), total / 1e3, top
