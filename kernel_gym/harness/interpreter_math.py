"""libdevice math under Triton's CPU interpreter (CPU runners only).

`triton.language.extra.libdevice` is a module of stubs (`def exp(arg0): ...`) that the GPU compiler resolves to the
backend's device library; Triton's interpreter (TRITON_INTERPRET=1, the CPU backend) does not, so a kernel calling
`libdevice.exp` gets None back (measured with triton 3.8). Helion lowers torch.exp, exp2, tanh, erf, rsqrt and more
to these calls, and hand-written Triton kernels use them too. `install()` replaces the stubs, in a CPU runner before
any candidate runs, with elementwise functions on the interpreter's tensors computed by torch's CPU kernels (the
reference's own math). Never on a GPU: there the compiler must see the stubs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch


def _round_half_away(x: torch.Tensor) -> torch.Tensor:
    return torch.sign(x) * torch.floor(torch.abs(x) + 0.5)  # C's round(); torch.round rounds half to even


UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "exp": torch.exp, "fast_expf": torch.exp, "exp2": torch.exp2, "exp10": lambda x: torch.pow(10.0, x),
    "expm1": torch.expm1, "log": torch.log, "fast_logf": torch.log, "log2": torch.log2, "log10": torch.log10,
    "log1p": torch.log1p, "sqrt": torch.sqrt, "sqrt_rn": torch.sqrt, "rsqrt": torch.rsqrt,
    "cbrt": lambda x: torch.sign(x) * torch.abs(x).pow(1.0 / 3.0), "sin": torch.sin, "cos": torch.cos,
    "tan": torch.tan, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh,
    "cosh": torch.cosh, "tanh": torch.tanh, "fast_tanhf": torch.tanh, "asinh": torch.asinh, "acosh": torch.acosh,
    "atanh": torch.atanh, "erf": torch.erf, "erfc": torch.erfc, "erfinv": torch.erfinv, "lgamma": torch.lgamma,
    "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc, "rint": torch.round, "nearbyint": torch.round,
    "round": _round_half_away, "abs": torch.abs, "fabs": torch.abs, "rcp_rn": torch.reciprocal,
    "sigmoid": torch.sigmoid,
}
BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "pow": torch.pow, "powf": torch.pow, "atan2": torch.atan2, "fmod": torch.fmod, "fmin": torch.fmin,
    "fmax": torch.fmax, "hypot": torch.hypot, "copysign": torch.copysign, "div_rn": torch.div,
    "fast_dividef": torch.div, "nextafter": torch.nextafter,
}
_INSTALLED: dict[str, Any] = {}


def _data(arg: Any) -> np.ndarray | None:
    handle = getattr(arg, "handle", None)
    return handle.data if handle is not None and hasattr(handle, "data") else None


def _result(like: Any, values: torch.Tensor) -> Any:
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    handle = like.handle
    data = values.numpy().astype(handle.data.dtype, copy=False)
    return tl.core.tensor(TensorHandle(data, handle.dtype.scalar), like.type)


def _unary(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., Any]:
    def call(arg0: Any, _semantic: Any = None) -> Any:
        data = _data(arg0)
        if data is None:  # a Python number: the host's math
            return float(fn(torch.tensor(float(arg0), dtype=torch.float64)))
        return _result(arg0, fn(torch.from_numpy(np.ascontiguousarray(data))))

    return call


def _binary(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Callable[..., Any]:
    def call(arg0: Any, arg1: Any, _semantic: Any = None) -> Any:
        a, b = _data(arg0), _data(arg1)
        like = max((x for x, d in ((arg0, a), (arg1, b)) if d is not None), key=lambda x: _data(x).ndim,
                   default=None)
        if like is None:
            return float(fn(torch.tensor(float(arg0), dtype=torch.float64), torch.tensor(float(arg1))))
        dtype = torch.from_numpy(np.ascontiguousarray(_data(like)[:0])).dtype
        ta = torch.from_numpy(np.ascontiguousarray(a)) if a is not None else torch.tensor(arg0, dtype=dtype)
        tb = torch.from_numpy(np.ascontiguousarray(b)) if b is not None else torch.tensor(arg1, dtype=dtype)
        out = fn(ta, tb)
        shape = np.broadcast_shapes(ta.shape, tb.shape)
        if tuple(shape) != tuple(_data(like).shape):  # broadcast beyond `like`: the interpreter's own broadcast
            raise ValueError(f"libdevice operands of shapes {tuple(ta.shape)} and {tuple(tb.shape)} differ")
        return _result(like, out.to(dtype))

    return call


def install() -> list[str]:
    """Replace the libdevice stubs this module knows with interpreter implementations; returns their names. Only
    when Triton runs under its interpreter (a CPU runner)."""
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        return []
    import triton.language.extra.libdevice as libdevice

    for table, wrap in ((UNARY, _unary), (BINARY, _binary)):
        for name, fn in table.items():
            if hasattr(libdevice, name) and name not in _INSTALLED:
                _INSTALLED[name] = getattr(libdevice, name)
                setattr(libdevice, name, wrap(fn))
    return sorted(_INSTALLED)

