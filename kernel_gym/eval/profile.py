"""GPU-time share of the candidate's own kernels, from the torch profiler (cuda only).

Own kernels are the Triton kernels the launch hooks saw and the `__global__` functions of the extensions the
worker built. Everything else (cuBLAS, cuDNN, ATen elementwise kernels) is library time. A solution whose own
kernels carry almost none of the GPU time is a decoy or a library call behind a custom kernel.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

# Minimum share of kernel time in the solution's own kernels, by anti-hack preset. Under `standard` and
# `permissive` the library GEMM/convolution kernels they allow are left out of the total: a 4096^3 cuBLAS GEMM
# legitimately dwarfs its fused epilogue, while a decoy beside a library elementwise op does not.
MIN_OWN_SHARE = {"strict": 0.5, "kevin-strict": 0.5, "standard": 0.5, "permissive": 0.1}
EXCLUDES_LIBRARY_GEMM = {"standard", "permissive"}
_LIBRARY_GEMM = re.compile(r"gemm|xmma|cutlass|cublas|nvjet|conv|cudnn|winograd|fprop|dgrad|wgrad", re.I)


def own_share(fn: Callable[[], Any], own_names: set[str], exclude_library_gemm: bool = False
              ) -> tuple[float, float, list[str]]:
    """Run fn under the profiler; (own share of kernel time, total kernel ms, top library kernel names).

    With exclude_library_gemm, library GEMM/convolution kernels (cuBLAS, cuBLASLt, CUTLASS, cuDNN) are not counted.
    """
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
        mine = any(n and n in name for n in own_names)
        if not mine and exclude_library_gemm and _LIBRARY_GEMM.search(name):
            continue
        total += us
        if mine:
            own += us
        else:
            library[name] = library.get(name, 0.0) + us
    top = [n for n, _ in sorted(library.items(), key=lambda kv: -kv[1])[:3]]
    return (own / total if total > 0 else 1.0), total / 1e3, top
