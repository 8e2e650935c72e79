"""Correct means "as accurate as the reference": the error budget against a float64 oracle.

The reference runner builds a float64 copy of the task's `Model` (same seed and weights, `.double()`) and runs it on
the same inputs cast to float64: the oracle, exact enough to measure fp32 rounding against. Per output, both the
reference's own fp32 result and the candidate's are measured against it, in two ways:

- `max_elem`: max_i |y_i - o_i| / (|o_i| + s), s = rms(o): the worst element, relative to its own size, or to the
  output's typical size where it is smaller (near a zero of the function, relative error means nothing);
- `rel_l2`: ||y - o|| / ||o||.

A candidate is correct when, for every output and both measures, `candidate <= k * reference + floor` (k = 8 by
default, `EvalConfig.error_budget_k`). Measured on CPU (benchmarks/RESULTS.md, "Error budget"):
- every task of tasks/level1 and tasks/level2 (CPU sizes, two seeds): rounding input and result through bf16 is at
  least 35x its limit (errors >= 1.1e-3), through fp16 at least 4.2x (>= 1.4e-4), the result alone through fp16
  at least 3.3x; the fp32 reference itself at most 0.03x, its errors at most 1.5e-6 (max_elem) and 7.9e-7 (rel_l2);
- honest solutions and reorderings: the project's genuine solutions at most 2.2x the reference's error; blocked,
  tree and split-K sums, chunked-K GEMMs, im2col and tap-by-tap convolutions at most 2x; a GEMM as one sequential
  FMA chain over K = 4096..16384, 4-7.5x (under the floor); one thread summing a whole row in order (no tree),
  20-120x the reference's tree sums, but 2e-6 (12288 terms) to 1e-5 (65536 terms): under the floor; a one-pass
  (E[x^2] - E[x]^2) layer norm summed in order is under it at 12288 terms (3.3e-5), over it at 65536 (7e-5).
So k = 8 keeps every honest reordering seen with room, and the floor (4e-5 for float32, ~670 units of fp32
roundoff) lets long in-order sums through while staying under the smallest fp16 rounding error (1.2e-4). A strict
preset may lower k. Rounding only the inputs through fp16 is not always visible in the result (a mean of 12288
squared differences averages it away): the static `precision` rule is what sees those casts.

Where there is no oracle (a Model that fails in float64, an output that is not floating point in it, a task that
allows reduced precision, an oracle call past `oracle_max_s`) the fixed rule of `kernel_gym.judge.compare` decides,
and the report says which rule was used and why. Hard bounds (structure, NaN/inf placement, degenerate outputs)
are the fixed rule's in every case.

Calls without an oracle of their own (the timed rounds, the reused-buffer check) compare the candidate with the
reference: by the triangle inequality a candidate within budget is within (k + 1) times the reference's error plus
the floor of the reference; twice that, from the largest reference error the trials measured, is their limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from kernel_gym.eval.result import Mismatch
from kernel_gym.judge.compare import _chunks

# The floor of the budget, per output dtype (see the module docstring for the data behind float32's).
FLOOR = {"float32": 4e-5, "float16": 4e-3, "bfloat16": 3e-2, "float64": 1e-12}
DEFAULT_K = 8.0
METRICS = ("max_elem", "rel_l2")
_TINY = 1e-30  # the typical size of an all-zero output (so 0/0 is 0 and anything else is far off)


@dataclass(frozen=True)
class Errors:
    """One output's errors against the oracle (or, without one, against the reference)."""

    max_elem: float
    rel_l2: float

    def get(self, metric: str) -> float:
        return getattr(self, metric)


@dataclass(frozen=True)
class OutputBudget:
    """The budget of one output in one call: both sides' errors and the limits they give."""

    index: int
    candidate: Errors
    reference: Errors
    k: float
    floor: float
    bad_places: int = 0  # elements whose NaN/inf placement differs from the reference's
    derived: bool = False  # no oracle of its own: candidate vs reference, limits from the trials' reference errors

    def limit(self, metric: str) -> float:
        if self.derived:  # |c - r| <= |c - o| + |r - o| <= (k + 1) r + floor; twice that (other inputs than the trials')
            return 2 * ((self.k + 1) * self.reference.get(metric) + self.floor)
        return self.k * self.reference.get(metric) + self.floor

    @property
    def ok(self) -> bool:
        return self.bad_places == 0 and all(self.candidate.get(m) <= self.limit(m) for m in METRICS)

    @property
    def worst(self) -> str:
        """The measure closest to (or furthest past) its limit."""
        return max(METRICS, key=lambda m: self.candidate.get(m) / max(self.limit(m), _TINY))

    def report(self) -> dict[str, Any]:
        m = self.worst
        ref = self.reference.get(m)
        return {"output": self.index, "metric": m, "candidate_error": _r(self.candidate.get(m)),
                "reference_error": _r(ref), "ratio": _r(self.candidate.get(m) / ref) if ref > 0 else None,
                "limit": _r(self.limit(m)),
                "candidate": {k: _r(self.candidate.get(k)) for k in METRICS},
                "reference": {k: _r(self.reference.get(k)) for k in METRICS}}


def _r(x: float) -> float:
    return float(f"{x:.4g}") if math.isfinite(x) else x


def errors(y: torch.Tensor, o: torch.Tensor, r: torch.Tensor | None = None,
           outliers: int = 0) -> tuple[Errors, Errors | None, int, int]:
    """(y's errors, r's errors, elements whose NaN/inf placement in y differs from r's, the first such index).

    Computed in float64, chunk by chunk, on the device (one synchronization each pass). The elements measured are
    those finite in y, o and r; where r is given, y must be non-finite exactly where r is (and equal there).
    `outliers` (the task's `outlier_fraction` of the output): both measures leave out that many elements, each
    side its own worst (by elementwise error): max_elem is then the (outliers+1)-th largest; the NaN/inf placement
    counts every element."""
    work = torch.float64
    zero = torch.zeros((), dtype=work, device=o.device)
    o_sq, count = zero.clone(), torch.zeros((), dtype=torch.int64, device=o.device)
    for _, oc in _chunks(work, o):
        fin = torch.isfinite(oc)
        o_sq += torch.where(fin, oc, 0).square().sum()
        count += fin.sum()
    o_sq_f, n = float(o_sq), int(count)
    s = max(math.sqrt(o_sq_f / n), _TINY) if n else _TINY
    sides = [y] if r is None else [y, r]
    stats = torch.zeros((len(sides), 3), dtype=work, device=o.device)  # max_elem, err_sq, o_sq (measured elements)
    # with outliers: per side the outliers + 1 largest elementwise errors, each with its d^2 and o^2 (rows)
    worst = [torch.zeros((3, 0), dtype=work, device=o.device) for _ in sides]
    bad = torch.zeros((), dtype=torch.int64, device=o.device)
    first = torch.full((), o.numel(), dtype=torch.int64, device=o.device)
    for start, *chunks in _chunks(work, o, *sides):
        oc, ys = chunks[0], chunks[1:]
        fin = torch.isfinite(oc)
        for y_c in ys:
            fin = fin & torch.isfinite(y_c)
        if r is not None:
            yc, rc = ys
            y_nan, r_nan = torch.isnan(yc), torch.isnan(rc)
            placed = (torch.isfinite(yc) == torch.isfinite(rc)) & (
                torch.isfinite(yc) | (y_nan & r_nan) | (~y_nan & ~r_nan & (yc == rc)))
            wrong = ~placed
            bad += wrong.sum()
            first = torch.minimum(first, torch.where(wrong.any(), start + wrong.to(torch.uint8).argmax(), first))
        oz = torch.where(fin, oc, 0)
        for j, y_c in enumerate(ys):
            d = torch.where(fin, (y_c - oc).abs(), 0)
            rel = d / (oz.abs() + s)
            if outliers:
                both = torch.cat([worst[j], torch.stack([rel.flatten(), d.square().flatten(),
                                                         oz.square().flatten()])], dim=1)
                worst[j] = both[:, both[0].topk(min(outliers + 1, both.shape[1])).indices]
            else:
                stats[j, 0] = torch.maximum(stats[j, 0], rel.max())
            stats[j, 1] += d.square().sum()
            stats[j, 2] += oz.square().sum()
    if outliers:  # (topk's values come sorted, largest first)
        for j, kept in enumerate(worst):
            left_out = kept[:, :outliers]
            stats[j, 0] = kept[0, outliers] if kept.shape[1] > outliers else 0.0
            stats[j, 1:] = (stats[j, 1:] - left_out[1:].sum(dim=1)).clamp(min=0)  # (rounding: never below 0)
    rows = stats.tolist()
    out = [Errors(m, math.sqrt(e_sq / o2) if o2 > 0 else (0.0 if e_sq == 0 else math.inf)) for m, e_sq, o2 in rows]
    return out[0], (out[1] if r is not None else None), int(bad), int(first)


def budget_for(i: int, got: torch.Tensor, expected: torch.Tensor, exact: torch.Tensor, k: float,
               floor: float, outliers: int = 0) -> tuple[OutputBudget, int]:
    """One output's budget from the oracle: (the budget, the first element placed wrongly or past the limit)."""
    cand, ref, bad, first = errors(got.detach(), exact.detach(), expected.detach(), outliers)
    return OutputBudget(i, cand, ref, k, floor, bad_places=bad), first


def derived_for(i: int, got: torch.Tensor, expected: torch.Tensor, ref_seen: Errors, k: float,
                floor: float, outliers: int = 0) -> tuple[OutputBudget, int]:
    """Without an oracle: the candidate against the reference, within the limits the trials' reference errors give."""
    cand, _, bad, first = errors(got.detach(), expected.detach(), expected.detach(), outliers)
    return OutputBudget(i, cand, ref_seen, k, floor, bad_places=bad, derived=True), first


def first_past(got: torch.Tensor, exact: torch.Tensor, limit: float) -> tuple[int, int, float]:
    """(elements whose elementwise error is past `limit`, the first one, the largest absolute error)."""
    n_bad, first, max_abs = 0, -1, 0.0
    o_sq = sum(float(torch.where(torch.isfinite(oc), oc, 0).square().sum()) for _, oc in _chunks(torch.float64, exact))
    s = max(math.sqrt(o_sq / max(exact.numel(), 1)), _TINY)
    for start, gc, oc in _chunks(torch.float64, got, exact):
        fin = torch.isfinite(gc) & torch.isfinite(oc)
        d = torch.where(fin, (gc - oc).abs(), 0)
        past = fin & (d / (oc.abs() + s) > limit)
        count = int(past.sum())
        if count and first < 0:
            first = start + int(past.to(torch.uint8).argmax())
        n_bad += count
        max_abs = max(max_abs, float(d.max()) if d.numel() else 0.0)
    return n_bad, first, max_abs


def mismatch_of(b: OutputBudget, got: torch.Tensor, against: torch.Tensor, first_place: int) -> Mismatch:
    """The Mismatch a failed budget reports: which measure, the numbers, and the first element past the limit."""
    from kernel_gym.judge.compare import _where

    if b.bad_places:
        return Mismatch(where=_where(b.index, got, against, first_place) + " (NaN/inf where the reference has none, "
                        "or a finite value where it has NaN/inf)", n_bad=b.bad_places, n_total=got.numel(),
                        rule="derived" if b.derived else "oracle")
    limit_elem = b.limit("max_elem")
    n_bad, first, max_abs = first_past(got, against, limit_elem)
    m = b.worst
    what = "the reference" if b.derived else "the float64 oracle"
    text = f"error against {what}: {m} {b.candidate.get(m):.3g} > limit {b.limit(m):.3g} ({budget_text(b, m)})"
    if first >= 0:  # (error_summary reads it as "first: ...": the first element past the elementwise limit)
        place = _where(b.index, got, against, first)
        text = f"{place} ({'reference' if b.derived else 'float64 oracle'}); {text}"
    else:
        text = f"output {b.index}: {text}"
    return Mismatch(max_abs_err=max_abs, max_rel_err=b.candidate.max_elem, where=text, n_bad=n_bad or None,
                    n_total=got.numel(), kind="value", rule="derived" if b.derived else "oracle")


def budget_text(b: OutputBudget, metric: str) -> str:
    if b.derived:
        return (f"2 x ((k+1) x the reference's own error {b.reference.get(metric):.3g} + floor {b.floor:g}), "
                f"k={b.k:g}")
    return f"k={b.k:g} x the reference's own error {b.reference.get(metric):.3g} + floor {b.floor:g}"


@dataclass
class Record:
    """What the job's comparisons measured, for `info["correctness"]` and the feedback."""

    k: float
    rule: str = "oracle"  # "oracle" | "fixed" | "mixed" (some outputs without an oracle)
    why: str = ""  # why the fixed rule was used
    worst: dict[str, Any] | None = None  # the worst output of the worst oracle-judged call
    worst_score: float = -1.0
    calls: int = 0
    ref_seen: dict[tuple[str, int], Errors] = field(default_factory=dict)  # (model, output) -> largest ref errors
    fixed_outputs: set[int] = field(default_factory=set)  # outputs the fixed rule judged (no oracle for them)
    oracle_outputs: list[bool] = field(default_factory=list)  # per tensor output: the oracle's is float64
    probe_s: float | None = None  # one float64 call's seconds (its first)

    def note(self, model: str, budgets: list[OutputBudget]) -> None:
        if budgets and not budgets[0].derived:
            self.calls += 1
        for b in budgets:
            if not b.derived:
                seen = self.ref_seen.get((model, b.index))
                ref = b.reference if seen is None else Errors(max(seen.max_elem, b.reference.max_elem),
                                                              max(seen.rel_l2, b.reference.rel_l2))
                self.ref_seen[(model, b.index)] = ref
            score = b.candidate.get(b.worst) / max(b.limit(b.worst), _TINY)
            if not b.derived and score > self.worst_score:
                self.worst_score, self.worst = score, b.report()

    def to_info(self, floor: float, oracle_ms: float) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "k": self.k, "floor": floor}
        if self.rule != "fixed" and self.worst is not None:
            out.update({key: self.worst[key] for key in ("candidate_error", "reference_error", "ratio", "limit",
                                                          "metric", "output")})
            out["candidate"], out["reference"] = self.worst["candidate"], self.worst["reference"]
        if self.why:
            out["why"] = self.why
        out["oracle_ms"] = round(oracle_ms, 3)
        if self.probe_s is not None:
            out["oracle_call_s"] = self.probe_s
        return out
