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
allows reduced precision, an oracle call past `oracle_max_s`) the fixed rule of `kernel_gym.eval.compare` decides,
and the report says which rule was used and why. Hard bounds (structure, NaN/inf placement, degenerate outputs)
are the fixed rule's in every case.

Calls without an oracle of their own (the timed rounds, the reused-buffer check) compare the candidate with the
reference: by the triangle inequality a candidate within budget is within (k + 1) times the reference's error plus
the floor of the reference; twice that, from the largest reference error the trials measured, is their limit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from kernel_gym.eval.compare import _chunks
from kernel_gym.eval.result import Mismatch
from kernel_gym.judge.outputs import assemble

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


def errors(y: torch.Tensor, o: torch.Tensor, r: torch.Tensor | None = None) -> tuple[Errors, Errors | None, int, int]:
    """(y's errors, r's errors, elements whose NaN/inf placement in y differs from r's, the first such index).

    Computed in float64, chunk by chunk, on the device (one synchronization each pass). The elements measured are
    those finite in y, o and r; where r is given, y must be non-finite exactly where r is (and equal there)."""
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
            stats[j, 0] = torch.maximum(stats[j, 0], (d / (oz.abs() + s)).max())
            stats[j, 1] += d.square().sum()
            stats[j, 2] += oz.square().sum()
    rows = stats.tolist()
    out = [Errors(m, math.sqrt(e_sq / o2) if o2 > 0 else (0.0 if e_sq == 0 else math.inf)) for m, e_sq, o2 in rows]
    return out[0], (out[1] if r is not None else None), int(bad), int(first)


def budget_for(i: int, got: torch.Tensor, expected: torch.Tensor, exact: torch.Tensor, k: float,
               floor: float) -> tuple[OutputBudget, int]:
    """One output's budget from the oracle: (the budget, the first element placed wrongly or past the limit)."""
    cand, ref, bad, first = errors(got.detach(), exact.detach(), expected.detach())
    return OutputBudget(i, cand, ref, k, floor, bad_places=bad), first


def derived_for(i: int, got: torch.Tensor, expected: torch.Tensor, ref_seen: Errors, k: float,
                floor: float) -> tuple[OutputBudget, int]:
    """Without an oracle: the candidate against the reference, within the limits the trials' reference errors give."""
    cand, _, bad, first = errors(got.detach(), expected.detach(), expected.detach())
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
    from kernel_gym.eval.compare import _where

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


ORACLE = "oracle:"  # the reference runner's name of a model's float64 copy ("oracle:main", "oracle:alt")


def _floating(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def to_float64(values: list[Any]) -> list[Any]:
    """The oracle's inputs: the same values, floating tensors cast to float64 (exactly: every fp32 is a float64)."""
    return [v.double() if _floating(v) else v for v in values]


def off_reason(job: Any) -> str:
    """Why this job has no oracle at all ("" when it may have one)."""
    if not job.config.oracle:
        return "the oracle is off (EvalConfig.oracle=False)"
    if job.allow_precision:
        return "the task allows reduced precision (its own contract)"
    if job.tolerance is not None:
        return "the task sets its own tolerance"
    if job.dtype not in ("float32", "float16", "bfloat16"):
        return f"the task's dtype is {job.dtype}: its reference is as exact as a float64 one"
    return ""


class Oracle:
    """The job's float64 oracle on the reference runner (built on first use, in the correctness stage: its time is
    in `stage_ms["oracle"]`, under the shared GPU lock, never in the exclusive timing stage), the comparison by
    the budget, and its record for `info["correctness"]`."""

    def __init__(self, jr: Any):
        self.jr = jr
        self.k = float(jr.cfg.error_budget_k)
        self.floor = FLOOR.get(jr.job.dtype or "float32", FLOOR["float32"])
        self.record = Record(k=self.k)
        self.off = off_reason(jr.job)
        self.built: dict[str, bool] = {}  # model -> usable
        self.ms = 0.0

    # ---- the oracle's calls --------------------------------------------------------------------------------------
    def outputs(self, model: str, values: list[Any], module: Any = None) -> list[Any] | None:
        """The oracle's outputs for these (fp32) inputs; None when this model has no oracle."""
        if self.off or not self.built.get(model, True):
            return None
        t0 = time.perf_counter()
        try:
            if model not in self.built:
                self.built[model] = self._build(model, module)
                if not self.built[model]:
                    return None
            return self._call(model, to_float64(values))
        finally:
            self.ms += (time.perf_counter() - t0) * 1e3
            self.jr.stage_ms["oracle"] = round(self.ms, 3)

    def _deadline(self) -> float:
        """Trusted code: the oracle has the rest of the run limit (a timeout would end the reference runner)."""
        jr = self.jr
        deadline = jr.budget.run_deadline
        return deadline if math.isfinite(deadline) else time.monotonic() + jr.cfg.run_timeout_s

    def _unavailable(self, model: str, why: str) -> bool:
        self.record.why = self.record.why or why
        if model == "main":
            self.off = why
        return False

    def _build(self, model: str, module: Any) -> bool:
        """`Model` under the job's seed, then `.double()`, in the reference runner; one probe call learns its outputs
        (and how long a float64 call takes: past `oracle_max_s` the fixed rule stays)."""
        from kernel_gym.judge.runners import RunnerFailure

        jr = self.jr
        name = ORACLE + model
        init = jr.init_inputs(module)
        reply = jr.ref.runner.request("build", deadline=self._deadline(), stage=jr.stage, name=name, module=model,
                                      cls="Model", init=init, seed=jr.cfg.seed, dtype="float64")
        if "error" in reply:
            return self._unavailable(model, "the task's Model does not build in float64: "
                                     + str(reply["error"].get("message", ""))[:200])
        values = to_float64(jr.inputs(jr.seed("probe"), module))
        t0 = time.perf_counter()
        try:
            _, spec, _ = jr.place_inputs(jr.ref, values, "in_" + name)
            evidence = jr.ref.runner.request("call", deadline=self._deadline(), stage=jr.stage, model=name,
                                             inputs=spec, slot_in="in_" + name, slot_out=None)
        except RunnerFailure as failure:
            from kernel_gym.errors import SandboxError

            raise SandboxError(f"the task's float64 oracle failed ({failure.kind}): {failure.message}") from None
        seconds = time.perf_counter() - t0
        self.record.probe_s = round(seconds, 4)
        if "error" in evidence:
            return self._unavailable(model, "the task's Model does not run in float64: "
                                     + str(evidence["error"].get("message", ""))[:200])
        structure = evidence.get("structure") or []
        mine = [s for s in structure if "shape" in s]
        specs, plain = jr.out_specs.get(model, ([], []))
        if len(structure) != len(specs) + len(plain) or len(mine) != len(specs) or any(
                tuple(a["shape"]) != b.shape for a, b in zip(mine, specs)):
            return self._unavailable(model, "the float64 Model's outputs differ in number or shape from the fp32 one's")
        poison = jr.poison_bytes  # (the candidate's fresh-memory poisoning follows its own outputs, not these)
        jr.learn_outputs(name, evidence)
        jr.poison_bytes = poison
        self.record.oracle_outputs = [s.get("dtype") == "float64" and b.dtype in ("float32", "float16", "bfloat16")
                                      for s, b in zip(mine, specs)]
        if not any(self.record.oracle_outputs):
            return self._unavailable(model, "no output of the float64 Model is float64 where the task's is floating")
        if seconds > jr.cfg.oracle_max_s:
            return self._unavailable(model, f"too slow: one float64 call took {seconds:.3g} s (oracle_max_s="
                                     f"{jr.cfg.oracle_max_s:g})")
        return True

    def _call(self, model: str, values: list[Any]) -> list[Any] | None:
        from kernel_gym.judge.runners import RunnerFailure

        jr = self.jr
        name = ORACLE + model
        _, spec, _ = jr.place_inputs(jr.ref, values, "in_" + name)
        arena = jr.slot(jr.ref, "out_" + name, jr.out_specs[name][0])
        try:
            evidence = jr.ref.runner.request("call", deadline=self._deadline(), stage=jr.stage, model=name,
                                             inputs=spec, slot_in="in_" + name, slot_out="out_" + name)
        except RunnerFailure as failure:
            from kernel_gym.errors import SandboxError

            raise SandboxError(f"the task's float64 oracle failed ({failure.kind}): {failure.message}") from None
        if "error" in evidence or not evidence.get("copied"):
            self.built[model] = self._unavailable(model, "the float64 Model failed on a trial's inputs")
            return None
        outputs = [t.clone() for t in arena.tensors]
        if jr.device.type == "cuda":
            torch.cuda.synchronize(jr.device)
        return assemble(outputs, evidence)

    # ---- the comparison ------------------------------------------------------------------------------------------
    def compare(self, got: list[Any], expected: list[Any], exact: list[Any] | None, model: str = "main"
                ) -> Mismatch | None:
        """None when every output is within its budget (or, without an oracle, the fixed rule's tolerance). Structure,
        NaN/inf where the reference is finite, and degenerate outputs are the fixed rule's hard bounds."""
        from kernel_gym.eval import compare as fixed

        jr = self.jr
        base = fixed.compare_outputs(got, expected, jr.atol, jr.rtol, jr.cfg.max_rel_l2)
        if base is not None and base.kind == "structure":
            return base
        budgets: list[OutputBudget] = []
        verdict: Mismatch | None = None
        k = 0
        for i, (g, e) in enumerate(zip(got, expected)):
            if not isinstance(e, torch.Tensor):
                continue
            t, k = k, k + 1  # the tensor's index among the tensor outputs (what the oracle's flags count)
            m_fixed = fixed._compare_values(i, g.detach(), e.detach(), jr.atol, jr.rtol, jr.cfg.max_rel_l2)  # noqa: SLF001
            if m_fixed is not None and m_fixed.kind in ("nan", "degenerate"):
                verdict = m_fixed
                break
            b, first = self._budget(i, t, g, e, exact, model)
            if b is None:
                self.record.fixed_outputs.add(i)
                if m_fixed is not None:
                    verdict = m_fixed
                    break
                continue
            budgets.append(b)
            if not b.ok:
                verdict = mismatch_of(b, g, exact[i] if exact is not None and not b.derived else e, first)
                break
            far = self._far_from_reference(i, g, e, b)
            if far is not None:
                verdict = far
                break
        self.record.note(model, budgets)
        return verdict

    def _far_from_reference(self, i: int, g: torch.Tensor, e: torch.Tensor, b: OutputBudget) -> Mismatch | None:
        """A hard bound no budget loosens: the candidate within `max_rel_l2` (1e-2) of the reference in norm, unless
        the reference itself is that far from the oracle. (A budget follows the oracle; an oracle gone wrong would
        otherwise widen it for anything, a stale or unwritten output included.)"""
        bound = max(self.jr.cfg.max_rel_l2, 2 * (self.k + 1) * b.reference.get("rel_l2"))
        err_sq = ref_sq = 0.0
        for _, gc, ec in _chunks(torch.float64, g.detach(), e.detach()):
            fin = torch.isfinite(gc) & torch.isfinite(ec)
            err_sq += float(torch.where(fin, gc - ec, 0).square().sum())
            ref_sq += float(torch.where(fin, ec, 0).square().sum())
        if ref_sq <= 0 or math.sqrt(err_sq / ref_sq) <= bound:
            return None
        rel = math.sqrt(err_sq / ref_sq)
        return Mismatch(where=f"output {i}: relative L2 distance {rel:.3g} from the reference (limit {bound:.3g}, "
                        "whatever the error budget)", n_total=g.numel(), rule="hard_bound")

    def _budget(self, i: int, t: int, g: torch.Tensor, e: torch.Tensor, exact: list[Any] | None, model: str
                ) -> tuple[OutputBudget | None, int]:
        flags = self.record.oracle_outputs
        if not (_floating(e) and e.dtype != torch.float64):
            return None, -1
        if exact is not None and t < len(flags) and flags[t] and _floating(exact[i]):
            return budget_for(i, g, e, exact[i], self.k, self.floor)
        seen = self.record.ref_seen.get((model, i))
        if exact is None and seen is not None:
            return derived_for(i, g, e, seen, self.k, self.floor)
        return None, -1

    # ---- the report ----------------------------------------------------------------------------------------------
    def info(self) -> dict[str, Any] | None:
        """`info["correctness"]`: the rule, k, the floor, and the worst output's errors, ratio and limit."""
        rec = self.record
        if rec.calls == 0 and not rec.fixed_outputs:  # (no output compared: the job ended earlier)
            return None
        rec.rule = "fixed" if rec.calls == 0 else "mixed" if rec.fixed_outputs else "oracle"
        if rec.rule == "fixed" and not rec.why:
            rec.why = self.off or "no output could be judged by the oracle"
        return rec.to_info(self.floor, self.ms)
