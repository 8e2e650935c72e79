"""The job's float64 oracle, run by the reference runner, and the comparison of outputs by the error budget
(judge/error_budget.py: what "as accurate as the reference" means, and the data behind its numbers)."""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from kernel_gym.eval.result import Mismatch
from kernel_gym.judge.compare import _chunks
from kernel_gym.judge.error_budget import FLOOR, OutputBudget, Record, budget_for, derived_for, errors, mismatch_of
from kernel_gym.judge.outputs import assemble

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
        self.twins: set[str] = set()  # models whose float64 copy the reference's runner made with the reference
        self.ms = 0.0

    # ---- the oracle's models -------------------------------------------------------------------------------------
    def twin(self, model: str) -> str | None:
        """The name the reference's runner keeps a float64 copy of `model` under, made right after the reference's
        own build (the same seeded construction, no call yet: what a second build would give, without its time);
        None when this job has no oracle."""
        return None if self.off or model not in ("main", "alt") else ORACLE + model

    def twinned(self, model: str, reply: dict[str, Any] | None) -> None:
        """The runner's answer about the copy (no answer, or an error: none was made, and `_build` builds it)."""
        if reply and reply.get("ok"):
            self.twins.add(model)

    # ---- the oracle's calls --------------------------------------------------------------------------------------
    def outputs(self, model: str, values: list[Any], module: Any = None) -> list[Any] | None:
        """The oracle's outputs for these (fp32) inputs; None when this model has no oracle."""
        if self.off or not self.built.get(model, True):
            return None
        t0 = time.perf_counter()
        try:
            if model not in self.built:
                self.built[model] = self._build(model, module)
                # (its own part: the float64 Model's build and probe call, once a job)
                built_ms = self.jr.stage_ms.get("oracle_build", 0.0) + (time.perf_counter() - t0) * 1e3
                self.jr.stage_ms["oracle_build"] = round(built_ms, 3)
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
        """`Model` under the job's seed, then `.double()`, in the reference runner (unless its copy was made with the
        reference's build); one probe call learns its outputs (and how long a float64 call takes: past
        `oracle_max_s` the fixed rule stays)."""
        from kernel_gym.judge.runners import RunnerFailure

        jr = self.jr
        name = ORACLE + model
        if model not in self.twins:  # (no copy made with the reference: built the usual way)
            init = jr.init_inputs(module)
            reply = jr.ref.runner.request("build", deadline=self._deadline(), stage=jr.stage, name=name,
                                          module=model, cls="Model", init=init, seed=jr.cfg.seed, dtype="float64",
                                          through=jr.cast)
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
        from kernel_gym.judge import compare as fixed

        jr = self.jr
        structure = fixed.structure_mismatch(got, expected)  # (the values are read once, below)
        if structure is not None:
            return structure
        budgets: list[OutputBudget] = []
        verdict: Mismatch | None = None
        k = 0
        for i, (g, e) in enumerate(zip(got, expected)):
            if not isinstance(e, torch.Tensor):
                continue
            t, k = k, k + 1  # the tensor's index among the tensor outputs (what the oracle's flags count)
            b, first = self._budget(i, t, g, e, exact, model)
            if b is None:
                m_fixed = fixed._compare_values(i, g.detach(), e.detach(), jr.atol, jr.rtol, jr.cfg.max_rel_l2)  # noqa: SLF001
                if m_fixed is None or m_fixed.kind not in ("nan", "degenerate"):
                    self.record.fixed_outputs.add(i)
                if m_fixed is not None:
                    verdict = m_fixed
                    break
                continue
            budgets.append(b)
            far = self._far_from_reference(i, g, e, b) if b.ok else None
            if b.ok and far is None:  # (no fixed pass over an output the budget accepts: NaN where the reference is
                continue  # finite fails the budget's placement, a degenerate one its norm or the hard bound)
            # what kind of wrong: NaN where the reference is finite, or a degenerate output (the hacks' checks read
            # the kind), is the fixed rule's word; any other failure, the budget's or the hard bound's
            m_fixed = fixed._compare_values(i, g.detach(), e.detach(), jr.atol, jr.rtol, jr.cfg.max_rel_l2)  # noqa: SLF001
            if m_fixed is not None and m_fixed.kind in ("nan", "degenerate"):
                verdict = m_fixed
            elif not b.ok:
                verdict = mismatch_of(b, g, exact[i] if exact is not None and not b.derived else e, first)
            else:
                verdict = far
            break
        self.record.note(model, budgets)
        return verdict

    def _far_from_reference(self, i: int, g: torch.Tensor, e: torch.Tensor, b: OutputBudget) -> Mismatch | None:
        """A hard bound no budget loosens: the candidate within `max_rel_l2` (1e-2) of the reference in norm, unless
        the reference itself is that far from the oracle. (A budget follows the oracle; an oracle gone wrong would
        otherwise widen it for anything, a stale or unwritten output included.) The task's outliers are left out here
        as in the budget: a top-k near-tie's few flipped outputs are O(1) each and, on a large output, alone come
        near 1e-2 in norm."""
        bound = max(self.jr.cfg.max_rel_l2, 2 * (self.k + 1) * b.reference.get("rel_l2"))
        outliers = self._outliers(g)
        if b.derived and math.isfinite(b.candidate.rel_l2):  # (already this measure: the candidate against the
            rel = b.candidate.rel_l2  # reference, the same elements and outliers left out; a timed round's pass saved)
        elif outliers:
            rel = errors(g.detach(), e.detach(), outliers=outliers)[0].rel_l2
        else:
            rel = _rel_l2(g.detach(), e.detach())
        if rel <= bound:
            return None
        return Mismatch(where=f"output {i}: relative L2 distance {rel:.3g} from the reference (limit {bound:.3g}, "
                        "whatever the error budget)", n_total=g.numel(), rule="hard_bound")

    def _outliers(self, g: torch.Tensor) -> int:
        """How many of this output's elements the task lets its measures leave out (`Task.outlier_fraction`)."""
        return int((self.jr.job.outlier_fraction or 0.0) * g.numel())

    def _budget(self, i: int, t: int, g: torch.Tensor, e: torch.Tensor, exact: list[Any] | None, model: str
                ) -> tuple[OutputBudget | None, int]:
        flags = self.record.oracle_outputs
        if not (_floating(e) and e.dtype != torch.float64):
            return None, -1
        outliers = self._outliers(g)
        if exact is not None and t < len(flags) and flags[t] and _floating(exact[i]):
            return budget_for(i, g, e, exact[i], self.k, self.floor, outliers)
        seen = self.record.ref_seen.get((model, i))
        if exact is None and seen is not None:
            return derived_for(i, g, e, seen, self.k, self.floor, outliers)
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


def _rel_l2(g: torch.Tensor, e: torch.Tensor) -> float:
    """||g - e|| / ||e|| over the elements finite in both, in float64 chunk by chunk (0 where e is all zeros)."""
    err_sq = ref_sq = 0.0
    for _, gc, ec in _chunks(torch.float64, g, e):
        fin = torch.isfinite(gc) & torch.isfinite(ec)
        err_sq += float(torch.where(fin, gc - ec, 0).square().sum())
        ref_sq += float(torch.where(fin, ec, 0).square().sum())
    return math.sqrt(err_sq / ref_sq) if ref_sq > 0 else 0.0
