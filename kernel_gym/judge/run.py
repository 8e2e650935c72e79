"""One job, judged: the trusted side of an evaluation. Runs in the judge's process, which never imports or calls
candidate code.

The judge owns the reference module (for `get_inputs`/`get_init_inputs`), the secret input seeds, the inputs and
their pristine copies, the tolerances, the comparison, the clock and the verdict. Two runners do the calling: the
candidate's (untrusted, fresh per job) and the reference's (the same program, the task's code only), so both
sides are called and timed the same way. Inputs and outputs cross in shared memory (`kernel_gym.sandbox.shared`):
the runner copies its outputs into the judge's NaN-filled buffers before it answers; the judge snapshots them
right after, in its own order, so an early answer reads as a mismatch.

Order: compile (load, build, first call) -> the correctness stage's registered checks in their order
(`kernel_gym.judge.checks`) -> timing (`kernel_gym.judge.measure`) -> signals.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernel_gym.checks.task_policy import task_policy
from kernel_gym.eval import compare, loading
from kernel_gym.eval.hacks import Hack
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Mismatch, Outcome, Timing
from kernel_gym.judge.budget import SETUP_LIMIT_S, Budget
from kernel_gym.judge.nan import fill_unwritten
from kernel_gym.judge.oracle import Oracle
from kernel_gym.judge.runners import RunnerFailure, RunnerProcess
from kernel_gym.judge.seeds import seed_for
from kernel_gym.sandbox.shared import Arena, Spec

log = logging.getLogger(__name__)
_LOW = ("float16", "bfloat16")
_HIGH = ("float32", "float64")
_RNG_LOCK = threading.Lock()  # torch's global generator: one input set at a time in this process


class Stop(Exception):
    """Ends the pipeline early with a finished result."""

    def __init__(self, outcome: Outcome, message: str, **fields: Any):
        super().__init__(message)
        self.outcome, self.message, self.fields = outcome, message, fields


@dataclass
class Call:
    """What the judge knows after one call: the outputs it snapshotted and the runner's evidence."""

    outputs: list[Any]
    evidence: dict[str, Any]
    sample: Any = None
    mismatch: Mismatch | None = None  # a structural difference already found (count, shape, dtype, device)


@dataclass
class Side:
    """One runner and its shared buffers for this job."""

    runner: RunnerProcess
    name: str  # "candidate" | "reference"
    slots: dict[str, Arena] = field(default_factory=dict)

    def close(self) -> None:
        for arena in self.slots.values():
            arena.close()
        self.slots.clear()


class JudgeRun:
    """State of one job on the judge's side."""

    def __init__(self, job: EvalJob, cand: RunnerProcess, ref: RunnerProcess):
        self.job, self.cfg = job, job.config
        self.device = torch.device(self.cfg.device)
        self.atol, self.rtol = job.tolerance or self.cfg.tolerances.get(job.dtype, (1e-4, 1e-4))
        # a fresh 128-bit key per job (judge/seeds.py); 0: the public, reproducible formula
        self.seed_key: bytes | int = secrets.token_bytes(16) if self.cfg.secret_seeds else 0
        # `standard`'s task policy (library GEMM/conv, epilogue reductions), from the trusted task source
        self.policy = task_policy(job.task_source)
        # the dynamic checks' preset: `none` has no static rule but `standard`'s dynamic policy
        self.dynamic_preset = "standard" if self.cfg.checks == "none" else self.cfg.checks
        self.cand, self.ref = Side(cand, "candidate"), Side(ref, "reference")
        self.stage_ms: dict[str, float] = {}
        self.signals: dict[str, float] = {}
        self.compiled = False
        self.stage = "compile"
        self.recycle = False  # the candidate's runner must not serve another job
        self.calls_without_launch = 0
        self.ungated: list[str] = []
        self.poison_bytes = 1 << 20
        self.ref_ms: float | None = None  # the reference's call time (host), once known: the hang limit follows it
        # compile and run limits of this job's requests (judge/budget.py): the runners' compile segments spend it
        self.budget = Budget(compile_left_s=self.cfg.compile_timeout_s)
        for runner in (cand, ref):
            if runner is not None:  # (None: a JudgeRun made for its seeds or inputs alone)
                runner.budget = self.budget
        self.module = loading.load_reference(job.task_source, job.sizes)  # trusted task code: inputs, init args
        self.out_specs: dict[str, tuple[list[Spec], list[Any]]] = {}  # model key -> (tensor specs, value outputs)
        self.clock: Any = None
        self.own_names: set[str] = set()  # the candidate's kernel names (its runner's evidence, for the profiler)
        self.earlier: list[list[Any]] = []  # the expected outputs of the latest calls (a stale answer matches one)
        self.oracle = Oracle(self)  # the float64 oracle and the error budget (judge/oracle.py)

    @property
    def timed_model(self) -> str:
        """What the candidate is timed against: the task's `Baseline` when it defines one, else `Model`."""
        return "timed" if "timed" in self.out_specs else "main"

    # ---- seeds, inputs, deadlines --------------------------------------------------------------------------------
    def seed(self, stream: str, i: int = 0) -> int:
        return seed_for(self.cfg.seed, self.seed_key, stream, i)

    def inputs(self, seed: int, module: Any = None, scale: float | None = None) -> list[Any]:
        """The task's inputs for `seed`, made here (never in a runner); the pristine copy of a call."""
        module = module or self.module
        devices = [torch.cuda.current_device()] if self.device.type == "cuda" else []
        with _RNG_LOCK, torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            with torch.device(self.device):
                values = [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in module.get_inputs()]
        if scale is not None:
            values = [v * scale if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]
        return values

    def init_inputs(self, module: Any = None) -> list[Any]:
        with _RNG_LOCK, torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.cfg.seed)
            return list((module or self.module).get_init_inputs())

    def call_limit(self) -> tuple[float, str]:
        """The limit of one call, the first included (seconds, compiling not counted), and how it was set: never
        more than `run_timeout_s`."""
        limit, run = self.cfg.call_timeout_s, self.cfg.run_timeout_s
        if limit is not None:
            text = f"{limit:g} s (call_timeout_s)"
        elif self.ref_ms is None:
            limit, text = run, f"{run:g} s"
        elif self.device.type == "cuda":
            limit = max(2.0, 50 * self.ref_ms / 1e3)
            text = f"{limit:.3g} s (max(2 s, 50x the reference's {self.ref_ms:.3g} ms per call))"
        else:
            limit = max(30.0, 1000 * self.ref_ms / 1e3)
            text = f"{limit:.3g} s (max(30 s, 1000x the reference's {self.ref_ms:.3g} ms per call))"
        if limit > run:
            return run, f"{run:g} s (run_timeout_s)"
        return limit, text

    @property
    def run_deadline(self) -> float:
        return self.budget.run_deadline

    @run_deadline.setter
    def run_deadline(self, value: float) -> None:
        self.budget.run_deadline = value

    def deadline(self, stage: str | None = None) -> float:
        """The run limit of a request that is not a call: loading and constructing (`SETUP_LIMIT_S`), then the
        call limit within the job's run limit. Compile segments in between are under the compile budget."""
        now = time.monotonic()
        if (stage or self.stage) in ("compile", "first_call"):
            return now + SETUP_LIMIT_S
        return min(now + self.call_limit()[0], self.run_deadline)

    def setup_deadline(self) -> float:
        """Loading a module or constructing a model (at any stage: the second shape's too): `SETUP_LIMIT_S`."""
        return min(time.monotonic() + SETUP_LIMIT_S, self.run_deadline)

    def call_deadline(self) -> float:
        """The run limit of one call, the first included: it follows the reference's call time (max(2 s, 50x) on
        cuda, max(30 s, 1000x) on cpu, where interpreted Triton is slow), within the job's run limit."""
        return min(time.monotonic() + self.call_limit()[0], self.run_deadline)

    def timeout_text(self, what: str) -> str:
        """Which limit a request ran into (`what`: "compile", "call", or another request's name)."""
        if what == "compile":
            return (f"the compile budget of {self.cfg.compile_timeout_s:g} s (compile_timeout_s: all of the job's "
                    "compiling together)")
        if time.monotonic() >= self.run_deadline - 0.5:
            return f"{self.cfg.run_timeout_s:g} s (run_timeout_s: all checks and timing together)"
        if what in ("call", "timed_call") or self.stage not in ("compile", "first_call"):
            return self.call_limit()[1] + " for one call, compiling not counted"
        return f"{SETUP_LIMIT_S:g} s for loading or constructing the model, compiling not counted"

    # ---- models --------------------------------------------------------------------------------------------------
    def build_reference(self, name: str, module: str, cls: str, init: list[Any], task_module: Any = None) -> None:
        """Build a reference-side model and learn its outputs' structure from one call (trusted)."""
        reply = self.ref.runner.request("build", deadline=self.setup_deadline(), stage=self.stage, name=name, module=module,
                                        cls=cls, init=init, seed=self.cfg.seed)
        if "error" in reply:
            self.fail(reply["error"], self.ref)
        probe = self.call(self.ref, name, self.inputs(self.seed("probe"), task_module),
                          slot="in" if name != "alt" else "in_alt")
        self.learn_outputs(name, probe.evidence)

    def build_models(self, name: str, module: Any, sizes: dict[str, Any]) -> None:
        """Model (reference runner) and ModelNew (candidate runner) for one shape, each right after seeding with
        the same seed (KernelBench's convention), from init inputs the judge made."""
        init = self.init_inputs(module)
        if name != "main":
            reply = self.ref.runner.request("load", deadline=self.setup_deadline(), stage=self.stage, kind="reference",
                                            name=name, source=self.job.task_source, sizes=sizes)
            if "error" in reply:
                self.fail(reply["error"], self.ref)
        self.build_reference(name, name, "Model", init, module)
        reply = self.cand.runner.request("build", deadline=self.setup_deadline(), stage=self.stage, name=name,
                                         module="main", cls="ModelNew", init=init, seed=self.cfg.seed)
        if "error" in reply:
            self.fail(reply["error"], self.cand)
        if reply.get("threads_started"):
            raise Hack("background_thread", "constructing ModelNew started a thread; do all work inside forward()")
        self.check_harness(reply)

    # ---- shared buffers ------------------------------------------------------------------------------------------
    def slot(self, side: Side, name: str, specs: list[Spec]) -> Arena:
        """The side's arena `name` with these specs (re-shared with its runner when the specs change)."""
        arena = side.slots.get(name)
        if arena is None or arena.specs != specs:
            if arena is not None:
                arena.close()
            arena = Arena(specs, self.device)
            descriptor, fds = arena.descriptor()
            side.runner.request("bind", deadline=self.deadline(), stage=self.stage, slot=name, descriptor=descriptor,
                                fds=fds)
            side.slots[name] = arena
        return arena

    def place_inputs(self, side: Side, values: list[Any], slot: str = "in",
                     staged: bool = False) -> tuple[Arena, list[dict], Callable[[], None]]:
        """The side's input buffers and the call's description of them, and what writes the values into them: at
        once, or (`staged`) when the clock calls it, after its start, so that no work can begin on them earlier."""
        specs = [Spec.of(v) for v in values if isinstance(v, torch.Tensor)]
        arena = self.slot(side, slot, specs)
        spec, pairs = [], []
        for v in values:
            if isinstance(v, torch.Tensor):
                pairs.append((arena.tensors[len(pairs)], v))
                spec.append({"t": len(pairs) - 1})
            else:
                spec.append({"v": v})

        def stage() -> None:
            for t, v in pairs:
                t.copy_(v)

        if not staged:
            stage()
            if self.device.type == "cuda":  # in place before any runner reads them (the copies run on the judge's
                torch.cuda.synchronize(self.device)  # stream; a runner's work on its own would race them)
        return arena, spec, stage

    # ---- one call ------------------------------------------------------------------------------------------------
    def call(self, side: Side, model: str, values: list[Any], *, timed: bool = False, slot: str = "in",
             retake: bool = True, **flags: Any) -> Call:
        """Call `model` on `side` with these inputs; returns the snapshotted outputs and the evidence. Candidate
        evidence is checked here (threads, harness, lazy outputs, input mutation); outputs are compared by the
        caller."""
        arena_in, spec, stage = self.place_inputs(side, values, slot, staged=timed)
        specs, _ = self.out_specs.get(model, ([], []))
        arena_out = self.slot(side, "out_" + model, specs) if model in self.out_specs else None
        fields = dict(model=model, inputs=spec, slot_in=slot, slot_out=("out_" + model) if arena_out else None,
                      stage=self.stage, **flags)

        def ready() -> None:  # unwritten outputs read as the fill, on the first take and on a retake alike
            if arena_out is not None:
                for t in arena_out.tensors:
                    fill_unwritten(t)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)

        def take() -> tuple[Any, dict]:
            ready()  # the runner's garbage collection and NaN poisoning come before the clock starts
            side.runner.request("collect", deadline=self.deadline(), stage=self.stage,
                                poison=self.poison_bytes if side is self.cand else 0)
            return self.clock.time(side.runner, fields, self.call_deadline(), stage=stage)

        if not timed:
            ready()
            if side is self.cand:
                fields["poison"] = self.poison_bytes
        t0 = time.perf_counter()
        if timed:
            sample, evidence = self.clock.timed(take) if retake else take()  # (a reading that is not kept: once)
        else:
            sample, evidence = None, side.runner.request("call", deadline=self.call_deadline(), **fields)
        if side is self.ref and not timed:
            self.ref_ms = min(self.ref_ms or float("inf"), (time.perf_counter() - t0) * 1e3)
        if "error" in evidence:
            self.fail(evidence["error"], side)
        outputs = [t.clone() for t in arena_out.tensors] if arena_out is not None else []
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        result = Call(outputs, evidence, sample)
        if side is self.cand:
            self.check_evidence(evidence)
            if not compare.tensors_equal([t for t in arena_in.tensors], [v for v in values if isinstance(v, torch.Tensor)]):
                raise Hack("input_mutation", "forward() modified its input tensors; write results to new outputs")
            if self.compiled and not evidence.get("launches"):
                self.calls_without_launch += 1
        if model in self.out_specs:
            result.mismatch = self.structure_mismatch(model, evidence)
            result.outputs = self.assemble(model, result.outputs, evidence)
        return result

    def fail(self, error: dict[str, Any], side: Side) -> None:
        """A runner reported an exception (candidate code, or the task's own on the reference side)."""
        if side is self.ref:
            from kernel_gym.errors import SandboxError

            raise SandboxError(f"the task's reference failed ({error.get('outcome')}): {error.get('message')}")
        if error.get("poisoned"):
            self.recycle = True
        extra = error.get("extra") or {}
        self.signals.update({k: float(v) for k, v in (extra.get("signals") or {}).items()
                             if isinstance(v, (int, float))})
        try:
            outcome = Outcome(error.get("outcome", "runtime_error"))
        except ValueError:
            outcome = Outcome.RUNTIME_ERROR
        if outcome is Outcome.CORRECT:  # a runner does not say what is correct
            outcome = Outcome.RUNTIME_ERROR
        message = str(error.get("message", ""))[:20_000]  # (runner text: where it failed, its frames)
        if outcome is Outcome.UNSUPPORTED and "compile_check" in extra:  # CUDA on cpu: compiled is the judge's call
            from kernel_gym.judge import compile_check

            ok, why = compile_check.verify(extra["compile_check"], self.job.code, self.signals)
            if not ok:
                raise Stop(Outcome.COMPILE_ERROR, why)
            self.compiled = True
        raise Stop(outcome, message)

    def check_evidence(self, evidence: dict[str, Any]) -> None:
        """The per-call checks on what the candidate's runner saw (evidence: forgeable, so it can only reject)."""
        if evidence.get("stray_threads"):
            raise Hack("background_thread", f"the forward left {evidence['stray_threads']} thread(s) running "
                       f"({evidence.get('stray_name', '?')}); all work must finish inside forward()")
        self.check_harness(evidence)
        if evidence.get("lazy"):
            i = evidence["lazy"][0]
            raise Hack("lazy_output", f"output {i} is a Tensor subclass; return a plain torch.Tensor with the values "
                       "computed")

    def check_harness(self, evidence: dict[str, Any]) -> None:
        changes = evidence.get("harness") or []
        if changes:
            self.recycle = True
            raise Hack("harness_tampering", "the solution modified the evaluation environment: "
                       + ", ".join(str(c) for c in changes[:20]))

    # ---- outputs -------------------------------------------------------------------------------------------------
    def learn_outputs(self, model: str, evidence: dict[str, Any]) -> None:
        """The reference's output structure (trusted): the shape of every buffer the judge shares from now on."""
        specs, values = [], []
        for item in evidence.get("structure", []):
            if "shape" in item:
                specs.append(Spec(tuple(item["shape"]), item["dtype"]))
            else:
                values.append(item.get("value"))
        self.out_specs[model] = (specs, values)
        self.poison_bytes = max(self.poison_bytes, sum(s.nbytes for s in specs))

    def structure_mismatch(self, model: str, evidence: dict[str, Any]) -> Mismatch | None:
        """A difference in the outputs' number, shapes, dtypes or devices (the candidate's as its runner reports it
        against the reference's structure). fp16/bf16 where the task's output is fp32: `precision_downcast`."""
        specs, values = self.out_specs[model]
        got = evidence.get("structure") or []
        n_expected = len(specs) + len(values)
        if len(got) != n_expected:
            return Mismatch(where=f"returned {len(got)} outputs, expected {n_expected}", kind="structure")
        tensors = [g for g in got if "shape" in g]
        if len(tensors) != len(specs):
            return Mismatch(where="an output is not a tensor where the reference returns one", kind="structure")
        for i, (g, e) in enumerate(zip(tensors, specs)):
            if tuple(g["shape"]) != e.shape:
                return Mismatch(where=f"output {i} has shape {tuple(g['shape'])}, expected {e.shape}", kind="structure")
            if g["dtype"] != e.dtype:
                if g["dtype"] in _LOW and e.dtype in _HIGH and not self.job.allow_precision:
                    raise Hack("precision_downcast", f"output {i} is {g['dtype']} where the task's is {e.dtype}")
                return Mismatch(where=f"output {i} has dtype torch.{g['dtype']}, expected torch.{e.dtype}",
                                kind="structure")
            if g.get("device") != self.device.type:
                return Mismatch(where=f"output {i} is on {g.get('device')}, expected {self.device.type}",
                                kind="structure")
        if not evidence.get("copied"):
            return Mismatch(where="the outputs could not be handed over", kind="structure")
        return None

    def assemble(self, model: str, tensors: list[torch.Tensor], evidence: dict[str, Any]) -> list[Any]:
        """Outputs in the order the model returned them: snapshotted tensors, reported plain values."""
        out, k = [], 0
        for item in evidence.get("structure", []):
            if "shape" in item and k < len(tensors):
                out.append(tensors[k])
                k += 1
            else:
                out.append(item.get("value"))
        return out

    def remember(self, expected: Call) -> None:
        if expected.outputs and not any(e is expected.outputs for e in self.earlier):
            self.earlier = [*self.earlier[-1:], expected.outputs]

    def stale(self, got: Call) -> bool:
        """The candidate's wrong answer equals the right answer to an earlier call (the judge's own record)."""
        return any(len(e) == len(got.outputs) and compare.compare_outputs(got.outputs, e, self.atol, self.rtol,
                                                                           self.cfg.max_rel_l2) is None
                   for e in self.earlier)

    def mismatch_text(self, m: Mismatch) -> str:
        if m.rule != "fixed":  # the error budget (judge/oracle.py): its numbers are in the text
            return compare.error_summary(m)
        return compare.error_summary(m) + f" (atol={self.atol:g}, rtol={self.rtol:g}, dtype {self.job.dtype})"

    def compare(self, got: Call, expected: Call, exact: list[Any] | None = None, model: str = "main"
                ) -> Mismatch | None:
        """The outputs' verdict: the error budget against the float64 oracle's `exact` outputs (without them, the
        budget the trials measured, or the fixed rule), inside the fixed rule's hard bounds (judge/oracle.py)."""
        return got.mismatch or self.oracle.compare(got.outputs, expected.outputs, exact, model)

    def judge(self, got: Call, expected: Call, where: str = "", exact: list[Any] | None = None,
              model: str = "main") -> Mismatch | None:
        """Compare outputs; degenerate or never-written outputs are hacks, other differences a mismatch. A NaN the
        candidate computed (an overflow) is a mismatch; only NaN bits of the unwritten fill are
        `uninitialized_output` (`kernel_gym.judge.nan`)."""
        from kernel_gym.judge.nan import unwritten

        if got.mismatch is not None:
            return got.mismatch
        mismatch = self.oracle.compare(got.outputs, expected.outputs, exact, model)
        stale = mismatch is not None and self.stale(got)
        self.remember(expected)
        if stale:
            raise Hack("output_caching", f"{where}forward() returned the result of an earlier call, not of its own "
                       f"fresh inputs ({self.mismatch_text(mismatch)}); every call must compute its own result")
        if mismatch is not None and mismatch.kind == "degenerate":
            raise Hack("degenerate_output", where + (mismatch.where or ""))
        if mismatch is not None and mismatch.kind == "nan" and unwritten(got.outputs, expected.outputs, self.device):
            raise Hack("uninitialized_output", f"{where}the output holds NaN where the reference is finite "
                       f"({self.mismatch_text(mismatch)}), with the bits of the fill that output memory gets before "
                       "every call: memory your kernels never wrote (stale or partial output)")
        return mismatch

    # ---- bookkeeping ---------------------------------------------------------------------------------------------
    def timed(self, name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            self.stage_ms[name] = round((time.perf_counter() - t0) * 1e3, 3)

    def result(self, outcome: Outcome, message: str, **fields: Any) -> EvalResult:
        compiled = self.compiled or outcome in (Outcome.CORRECT, Outcome.MISMATCH) or (
            self.stage != "compile" and outcome is not Outcome.COMPILE_ERROR)
        if self.cand.runner.build_ms:  # inside compile (or a check that built again): the build service's share
            self.stage_ms["build"] = round(self.cand.runner.build_ms, 3)
        if self.budget.segments:  # compiling (builds included), under the compile budget, holding no GPU
            self.stage_ms["compile_segments"] = round(self.budget.compile_ms, 3)
            self.stage_ms["gpu_share_rewait"] = round(self.budget.share_wait_ms, 3)
        return EvalResult(outcome=outcome, message=message, backend=self.job.backend, compiled=compiled,
                          stage_ms=dict(self.stage_ms), signals=dict(self.signals), worker_recycled=self.recycle,
                          correctness=self.oracle.info(), **fields)

    def execute(self) -> EvalResult:
        from kernel_gym.judge import pipeline

        try:
            timing: Timing = pipeline.run(self)
        except Hack as hack:
            return self.result(Outcome.REJECTED, hack.message, hacks=(hack.name,), hack_details=(hack.message,))
        except Stop as stop:
            return self.result(stop.outcome, stop.message, **stop.fields)
        except RunnerFailure as failure:
            self.recycle = True
            return self.runner_failure(failure)
        return self.result(Outcome.CORRECT, "", timing=timing)

    def runner_failure(self, failure: RunnerFailure) -> EvalResult:
        if failure.kind == "timeout":
            return self.result(Outcome.TIMEOUT, f"the {self.stage} stage did not finish within "
                               f"{self.timeout_text(failure.message)} (an infinite loop, a deadlock, a kernel that "
                               "never ends, or far too much work); the process was killed")
        if failure.kind == "tampered":
            why = failure.message
            return self.result(Outcome.REJECTED, f"the result channel was tampered with: {why}",
                               hacks=("output_tampering",), hack_details=(why,))
        return self.result(Outcome(failure.kind), failure.message)

    def close(self) -> None:
        for side in (self.cand, self.ref):
            side.close()
            if side.runner is not None:
                side.runner.budget = None
        if self.budget.hold is not None:
            self.budget.hold.let_go()
