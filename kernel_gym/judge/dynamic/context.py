"""What the dynamic checks see of one job: the judge's own calls, inputs and comparisons through a narrow
interface, and what each stage saw (`Built`, `Called`, `Compared`, `TimedRound`, `AfterTiming`). Checks never hold
the judge's state (JudgeRun): they may call the runners through the judge, compare, and note signals.

Evidence from the candidate's runner (threads, harness changes, op audit, launches, profiler share) is forgeable,
so the checks that read it can only reject: forged evidence lets at worst a library call through, never a wrong
output or a false time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel_gym.checks import library_policy
from kernel_gym.eval.result import Mismatch
from kernel_gym.judge import compare, models
from kernel_gym.judge.dynamic.registry import run_stage
from kernel_gym.judge.sides import Call
from kernel_gym.tasks import loading


@dataclass(frozen=True)
class Built:
    """The candidate's runner loaded the solution or built ModelNew."""

    evidence: dict[str, Any]
    what: str  # "importing the solution" | "constructing ModelNew"


@dataclass(frozen=True)
class Called:
    """One call of the candidate, as its runner reported it and the judge saw it."""

    evidence: dict[str, Any]
    inputs_intact: bool  # the judge's input buffers equal the values it placed there
    structure: Mismatch | None  # a difference in the outputs' number, shapes, dtypes or devices


@dataclass(frozen=True)
class Compared:
    """The candidate's outputs against the reference's (and the float64 oracle's)."""

    got: Call
    expected: Call
    mismatch: Mismatch | None
    stale: bool  # the wrong answer equals the right answer to an earlier call
    where: str


@dataclass(frozen=True)
class TimedRound:
    index: int
    mismatch: Mismatch | None


@dataclass(frozen=True)
class AfterTiming:
    again: bool  # the job was timed a second time (ungated); the audited call after timing was already made


class Context:
    """One job's judge as the checks see it."""

    def __init__(self, jr: Any):
        self._jr = jr
        self.cfg, self.device = jr.cfg, jr.device
        self.backend, self.alt_sizes, self.task_source = jr.job.backend, jr.job.alt_sizes, jr.job.task_source
        self.preset = jr.dynamic_preset  # the dynamic checks' preset (`none` has `standard`'s dynamic policy)
        self.policy = jr.policy  # the task's policy (library GEMM/conv, epilogue reductions), from its source
        self._earlier: list[list[Any]] = []  # the expected outputs of the latest calls (a stale answer matches one)
        jr.inspect = lambda called: run_stage(self, "call", called)  # every candidate call, from now on

    def close(self) -> None:
        """The job is judged: the outputs it kept go (judge/pipeline.py)."""
        self._earlier = []

    # ---- what the judge knows ------------------------------------------------------------------------------------
    @property
    def own_names(self) -> list[str]:
        return sorted(self._jr.own_names)

    @property
    def calls_without_launch(self) -> int:
        return self._jr.calls_without_launch

    @property
    def signals(self) -> dict[str, float]:
        return dict(self._jr.signals)

    @property
    def ungated(self) -> bool:
        return bool(self._jr.ungated)

    @property
    def gated(self) -> bool:
        return bool(getattr(self._jr.clock, "gated", False))

    # ---- what a check may change: signals, the ungated list, recycling ---------------------------------------------
    def note(self, **signals: float) -> None:
        self._jr.signals.update({k: float(v) for k, v in signals.items()})

    def note_ungated(self, kernels: list[str]) -> None:
        """Kernels on a stream outside the launch gate's reach: this solution is timed without the gate."""
        if kernels and not self._jr.ungated and self.cfg.launch_gate:
            self._jr.ungated = [str(k) for k in kernels]
            self.note(ungated_stream_kernels=len(kernels))

    def recycle(self) -> None:
        """The candidate's runner must not serve another job."""
        self._jr.recycle = True

    def timed(self, name: str, fn: Callable[[], Any]) -> Any:
        return self._jr.timed(name, fn)

    # ---- calls through the judge ---------------------------------------------------------------------------------
    def inputs(self, stream: str, i: int = 0, module: Any = None, scale: float | None = None) -> list[Any]:
        """Fresh inputs from the judge's secret stream `stream`."""
        return self._jr.inputs(self._jr.seed(stream, i), module, scale)

    def call(self, side: str, model: str, values: list[Any], **flags: Any) -> Call:
        """`side` ("candidate" | "reference") calls `model` on `values`; the candidate's "call" checks run on it."""
        jr = self._jr
        return jr.call(jr.cand if side == "candidate" else jr.ref, model, values, **flags)

    def timed_call(self, stream: str, **flags: Any) -> Call:
        """One candidate call through the clock, like a timed round (its reading not kept)."""
        self._jr.clock.flush()
        return self.call("candidate", "main", self.inputs(stream), timed=True, retake=False, **flags)

    def ask(self, op: str) -> dict[str, Any]:
        """A request to the candidate's runner outside any call (e.g. "harness": what it sees changed)."""
        return self._jr.cand.runner.request(op, deadline=self._jr.deadline(), stage=self._jr.stage)

    def exact(self, model: str, values: list[Any], module: Any = None) -> list[Any] | None:
        """The float64 oracle's outputs for these inputs (judge/oracle.py), when it runs for this task."""
        return self._jr.oracle.outputs(model, values, module)

    def load_reference(self, sizes: dict[str, Any]) -> Any:
        return loading.load_reference(self.task_source, sizes)

    def build_models(self, name: str, module: Any, sizes: dict[str, Any]) -> None:
        """Model and ModelNew for one shape (judge/models.py); the "build" checks run on ModelNew's."""
        reply = models.build_models(self._jr, name, module, sizes)
        run_stage(self, "build", Built(reply, "constructing ModelNew"))

    # ---- comparisons ---------------------------------------------------------------------------------------------
    def compare(self, got: Call, expected: Call, exact: list[Any] | None = None, model: str = "main"
                ) -> Mismatch | None:
        """The outputs' verdict: the error budget against the float64 oracle's `exact` outputs (without them, the
        budget the trials measured, or the fixed rule), inside the fixed rule's hard bounds (judge/oracle.py)."""
        return got.mismatch or self._jr.oracle.compare(got.outputs, expected.outputs, exact, model)

    def judge_outputs(self, got: Call, expected: Call, where: str = "", exact: list[Any] | None = None,
                      model: str = "main") -> Mismatch | None:
        """`compare`, then the "outputs" checks (a stale, degenerate or never-written answer is a hack)."""
        if got.mismatch is not None:
            return got.mismatch
        mismatch = self._jr.oracle.compare(got.outputs, expected.outputs, exact, model)
        stale = mismatch is not None and self._stale(got)
        self.remember(expected)
        run_stage(self, "outputs", Compared(got, expected, mismatch, stale, where))
        return mismatch

    def trial(self, stream: str, i: int = 0, *, scale: float | None = None, strict: bool = True,
              model: str = "main", module: Any = None, slot: str = "in", oracle: bool = True,
              **flags: Any) -> Mismatch | None:
        """One correctness trial on fresh inputs from the judge's secret stream: the reference first (and its
        float64 oracle), then the candidate on its own copy. None when correct. `strict=False`: any difference,
        NaN included, is a plain mismatch (no "outputs" checks)."""
        values = self.inputs(stream, i, module, scale)
        expected = self.call("reference", model, values, slot=slot)
        if scale is not None and not all(bool(o.isfinite().all()) for o in expected.outputs
                                         if hasattr(o, "is_floating_point") and o.is_floating_point()):
            return None  # the task itself is not defined on rescaled inputs
        exact = self.exact(model, values, module) if oracle else None
        got = self.call("candidate", model, values, slot=slot, **flags)
        if not strict:
            return self.compare(got, expected, exact, model)
        return self.judge_outputs(got, expected, exact=exact, model=model)

    def remember(self, expected: Call) -> None:
        if expected.outputs and not any(e is expected.outputs for e in self._earlier):
            self._earlier = [*self._earlier[-1:], expected.outputs]

    def _stale(self, got: Call) -> bool:
        """The candidate's wrong answer equals the right answer to an earlier call (the judge's own record)."""
        jr = self._jr
        return any(len(e) == len(got.outputs)
                   and compare.compare_outputs(got.outputs, e, jr.atol, jr.rtol, self.cfg.max_rel_l2) is None
                   for e in self._earlier)

    def mismatch_text(self, m: Mismatch) -> str:
        if m.rule != "fixed":  # the error budget (judge/error_budget.py): its numbers are in the text
            return compare.error_summary(m)
        jr = self._jr
        return compare.error_summary(m) + f" (atol={jr.atol:g}, rtol={jr.rtol:g}, dtype {jr.job.dtype})"

    # ---- the library policy --------------------------------------------------------------------------------------
    def forbidden(self, ops: dict[str, int]) -> list[str]:
        """PyTorch compute the preset forbids, among the ops the runner's audit saw."""
        from kernel_gym.harness.op_audit import forbidden

        return forbidden(ops if isinstance(ops, dict) else {}, self.preset, self.policy)

    def policy_text(self, kinds: set[str] | None = None) -> str:
        """The policy's own sentences (kernel_gym.checks.library_policy), as the static rule quotes them: those of
        the kinds found (a GEMM, a reduction), or the preset's whole list for any other compute."""
        return library_policy.explain(self.preset, None if not kinds or "compute" in kinds else kinds)

    def note_skipped_stream_check(self, prof: dict) -> None:
        """The profiler's trace did not start with one marker per gated stream, so kernels on ungated streams could
        not be looked for (diagnostics: what the trace held instead)."""
        skipped = prof.get("stream_check_skipped")
        if isinstance(skipped, dict):
            self.note(**{f"stream_check_skipped_{k}": v for k, v in skipped.items()
                         if k in ("markers", "lead", "ids", "events") and isinstance(v, (int, float))})

