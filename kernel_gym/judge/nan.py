"""Tell a NaN the candidate never wrote from a NaN it computed, by the bits.

Output memory is filled before every call with NaN of known bits: the judge's buffers with 0xFF bytes, the
runner's fresh memory with 0xFF bytes on cuda and with torch's deterministic fill (the positive quiet NaN) on cpu.
Arithmetic makes other NaNs: the hardware's default NaN (x86: negative quiet NaN 0xFFC00000; CUDA: 0x7FFFFFFF).
So NaN where the reference is finite *with a fill's bits* is memory the solution never wrote
(`uninitialized_output`); any other NaN is an honest numerical bug, reported as a mismatch.
"""

from __future__ import annotations

from typing import Any

import torch

_INT = {2: torch.int16, 4: torch.int32, 8: torch.int64}
_QUIET = {torch.float32: 0x7FC00000, torch.float64: 0x7FF8000000000000, torch.float16: 0x7E00, torch.bfloat16: 0x7FC0}


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def fill_patterns(dtype: torch.dtype, device: torch.device) -> list[int]:
    """The bit patterns (as signed integers of the dtype's width) that unwritten output memory holds."""
    bits = dtype.itemsize * 8
    patterns = [_signed((1 << bits) - 1, bits)]  # 0xFF.. bytes
    if device.type == "cpu" and dtype in _QUIET:
        patterns.append(_signed(_QUIET[dtype], bits))
    return patterns


def unwritten(got: list[Any], expected: list[Any], device: torch.device) -> bool:
    """True when some output holds a fill's NaN where the reference is finite."""
    for g, e in zip(got, expected):
        if not (isinstance(g, torch.Tensor) and isinstance(e, torch.Tensor)) or not g.is_floating_point():
            continue
        if g.shape != e.shape or g.dtype.itemsize not in _INT:
            continue
        mask = torch.isnan(g) & torch.isfinite(e.to(g.dtype) if e.dtype != g.dtype else e)
        if not bool(mask.any()):
            continue
        bits = g[mask].contiguous().view(_INT[g.dtype.itemsize])
        patterns = torch.tensor(fill_patterns(g.dtype, device), dtype=bits.dtype, device=bits.device)
        if bool(torch.isin(bits, patterns).any()):
            return True
    return False


def fill_unwritten(t: torch.Tensor) -> None:
    """Fill a judge buffer with the unwritten pattern (0xFF bytes: NaN in every float type)."""
    if t.numel():
        t.reshape(-1).view(torch.uint8).fill_(0xFF)  # (judge buffers are contiguous views of an arena)
