"""Compare candidate outputs with reference outputs: shapes, dtypes, values, and degenerate outputs."""

from __future__ import annotations

import math
from typing import Any

import torch

from kernel_gym.eval.result import Mismatch


def flatten_outputs(out: Any) -> list[Any]:
    """A forward may return a tensor or a tuple/list of tensors; anything else is compared as-is."""
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def _where(index: int, got: torch.Tensor, exp: torch.Tensor, flat_idx: int) -> str:
    pos = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat_idx), exp.shape)) if exp.dim() else ()
    g, e = got.reshape(-1)[flat_idx].item(), exp.reshape(-1)[flat_idx].item()
    return f"output {index} at index {pos}: got {g:.6g}, expected {e:.6g}"


def compare_outputs(got: Any, expected: Any, atol: float, rtol: float, max_rel_l2: float) -> Mismatch | None:
    """None when every output matches; otherwise what differs and where (the first bad element)."""
    structure = structure_mismatch(got, expected)
    if structure is not None:
        return structure
    for i, (g, e) in enumerate(zip(flatten_outputs(got), flatten_outputs(expected))):
        if isinstance(e, torch.Tensor):
            bad = _compare_values(i, g.detach(), e.detach(), atol, rtol, max_rel_l2)
            if bad:
                return bad
    return None


def structure_mismatch(got: Any, expected: Any) -> Mismatch | None:
    """The outputs' count, types, shapes, dtypes, devices and non-tensor values against the reference's (no tensor
    value is read): None when they agree, else the first that differs (kind "structure")."""
    got_list, exp_list = flatten_outputs(got), flatten_outputs(expected)
    if len(got_list) != len(exp_list):
        return Mismatch(where=f"returned {len(got_list)} outputs, expected {len(exp_list)}", kind="structure")
    for i, (g, e) in enumerate(zip(got_list, exp_list)):
        if not isinstance(e, torch.Tensor):
            if g != e:
                return Mismatch(where=f"output {i}: got {g!r}, expected {e!r}", kind="structure")
            continue
        if not isinstance(g, torch.Tensor):
            return Mismatch(where=f"output {i} is a {type(g).__name__}, expected a tensor", kind="structure")
        if tuple(g.shape) != tuple(e.shape):
            return Mismatch(where=f"output {i} has shape {tuple(g.shape)}, expected {tuple(e.shape)}", kind="structure")
        if g.dtype != e.dtype:
            return Mismatch(where=f"output {i} has dtype {g.dtype}, expected {e.dtype}", kind="structure")
        if g.device != e.device:
            return Mismatch(where=f"output {i} is on {g.device}, expected {e.device}", kind="structure")
    return None


CHUNK = 1 << 22  # elements compared at a time: the comparison's temporaries stay ~0.1 GiB whatever the output's size


def _chunks(work: torch.dtype | None, *tensors: torch.Tensor):
    """(offset, *chunks) over the flattened tensors, CHUNK elements at a time, in the working dtype (None: their
    own). Whole, a full-size output's comparison made ~7 float32 copies of it at once (a 512 MiB output, 3.8 GiB;
    the judge compares up to 8 jobs' at once)."""
    flat = [t.reshape(-1) for t in tensors]
    for start in range(0, flat[0].numel(), CHUNK):
        yield (start, *(t[start:start + CHUNK] if work is None else t[start:start + CHUNK].to(work) for t in flat))


def _sq(x: torch.Tensor) -> torch.Tensor:
    return torch.linalg.vector_norm(x).double() ** 2  # (inf once a float32 sum of squares overflows: see below)


def _compare_values(i: int, g: torch.Tensor, e: torch.Tensor, atol: float, rtol: float, max_rel_l2: float,
                    work: torch.dtype | None = None) -> Mismatch | None:
    """Elementwise closeness, NaN/inf placement and the relative L2 error, accumulated on the device chunk by chunk
    (two synchronizations in all). In float32 unless that overflows somewhere (finite values ~3e38 apart, or past
    ~1e19 for a sum of squares, which made the tolerance infinite): then all of it again in float64."""
    if e.numel() == 0:
        return None
    wide = g.dtype == torch.float64 or work is torch.float64
    work = torch.float64 if wide else torch.float32  # fp32 math: no copy for fp32 outputs
    # atol scales with the output's magnitude (its RMS over the finite values, when above 1): accumulation-order
    # error of a long fp32 sum grows with the result, while a precision drop (tf32, fp16) still shows at ~1e-3 of it.
    ref_rms_sq = float(sum(_sq(torch.where(torch.isfinite(ec), ec, 0)) for _, ec in _chunks(work, e))) / e.numel()
    if not math.isfinite(ref_rms_sq) and not wide:
        return _compare_values(i, g, e, atol, rtol, max_rel_l2, torch.float64)
    tol = atol * max(1.0, math.sqrt(ref_rms_sq))
    zero = torch.zeros((), dtype=torch.float64, device=e.device)
    max_abs, max_rel, ref_sq, err_sq = zero, zero, zero, zero
    n_bad = torch.zeros((), dtype=torch.int64, device=e.device)
    nan_where_finite = torch.zeros((), dtype=torch.bool, device=e.device)
    first = torch.full((), e.numel(), dtype=torch.int64, device=e.device)
    for start, gc, ec in _chunks(work, g, e):
        diff = (gc - ec).abs()
        # NaN/inf must appear exactly where the reference has them.
        g_nan, e_nan = torch.isnan(gc), torch.isnan(ec)
        finite = torch.isfinite(ec) & torch.isfinite(gc)
        special_ok = ~finite & (g_nan == e_nan) & ((gc == ec) | (g_nan & e_nan))
        bad = ~((finite & (diff <= tol + rtol * ec.abs())) | special_ok)
        fin_diff = torch.where(finite, diff, torch.zeros_like(diff))
        max_abs = torch.maximum(max_abs, fin_diff.max().double())
        max_rel = torch.maximum(max_rel, (fin_diff / ec.abs().clamp_min(tol)).max().double())
        n_bad = n_bad + bad.sum()
        first = torch.minimum(first, torch.where(bad.any(), start + bad.to(torch.uint8).argmax(), first))
        nan_where_finite = nan_where_finite | (g_nan & torch.isfinite(ec)).any()
        ref_sq = ref_sq + _sq(torch.where(finite, ec, 0))
        err_sq = err_sq + _sq(fin_diff)
    max_abs, max_rel, ref_sq, err_sq = torch.stack([max_abs, max_rel, ref_sq, err_sq]).tolist()
    n_bad, first, nan_where_finite = int(n_bad), int(first), bool(nan_where_finite)
    if not all(math.isfinite(v) for v in (max_abs, ref_sq, err_sq)) and not wide:
        return _compare_values(i, g, e, atol, rtol, max_rel_l2, torch.float64)
    if n_bad:
        return Mismatch(max_abs, max_rel, _where(i, g, e, first), n_bad, e.numel(), "nan" if nan_where_finite else "value")
    ref_norm, err_norm = math.sqrt(ref_sq), math.sqrt(err_sq)
    if ref_norm > 0 and err_norm / ref_norm > max_rel_l2:
        return Mismatch(
            max_abs, max_rel,
            f"output {i}: every element is within atol={tol:g}, but the relative L2 error is {err_norm / ref_norm:.3g} "
            f"(limit {max_rel_l2:g}); the output is degenerate (e.g. all zeros against a small-valued reference)",
            0, e.numel(), "degenerate",
        )
    return None


def tensors_equal(a: Any, b: Any) -> bool:
    """Bitwise equality of two (nested) input lists, NaN-aware; used to detect input mutation."""
    la, lb = flatten_outputs(a), flatten_outputs(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if isinstance(x, torch.Tensor):
            if not isinstance(y, torch.Tensor) or x.shape != y.shape or x.dtype != y.dtype:
                return False
            for _, xc, yc in _chunks(None, x, y):  # a chunk at a time: no whole copies of a large input
                if not torch.equal(xc.nan_to_num(0.0), yc.nan_to_num(0.0)):
                    return False
    return True


def error_summary(m: Mismatch) -> str:
    parts = []
    if m.n_bad:
        parts.append(f"{m.n_bad:,} of {m.n_total:,} elements differ")
    if m.max_abs_err is not None:
        parts.append(f"max abs error {m.max_abs_err:.3g}, max rel error {m.max_rel_err:.3g}")
    if m.where:
        parts.append(f"first: {m.where}")
    return "; ".join(parts)
