"""One job on the judge's side: its state and its runners' I/O. Runs in the judge's process, which never imports
or calls candidate code.

The judge owns the reference module (for `get_inputs`/`get_init_inputs`), the secret input seeds, the inputs and
their pristine copies, the tolerances, the comparison, the clock and the verdict. Two runners do the calling: the
candidate's (untrusted, fresh per job) and the reference's (the same program, the task's code only), so both
sides are called and timed the same way. Inputs and outputs cross in shared memory (`kernel_gym.sandbox.shared`):
the runner copies its outputs into the judge's NaN-filled buffers before it answers; the judge snapshots them
right after, in its own order, so an early answer reads as a mismatch. The order of a job is the pipeline's
(judge/pipeline.py); the verdicts are the registered checks' (judge/dynamic/).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

import torch

from kernel_gym.checks.task_policy import task_policy
from kernel_gym.eval.job import EvalJob
from kernel_gym.judge import compare, outcome, outputs
from kernel_gym.judge.budget import Budget
from kernel_gym.judge.dynamic.context import Called
from kernel_gym.judge.inputs import SecretInputs
from kernel_gym.judge.limits import Limits
from kernel_gym.judge.nan import fill_unwritten
from kernel_gym.judge.oracle import Oracle
from kernel_gym.judge.runners import RunnerProcess
from kernel_gym.judge.sides import Call, Side
from kernel_gym.sandbox.shared import Arena, Spec
from kernel_gym.tasks import loading
from kernel_gym.tasks.precision import dtype_of


class JudgeRun:
    """State of one job on the judge's side, and its runners' I/O."""

    def __init__(self, job: EvalJob, cand: RunnerProcess, ref: RunnerProcess):
        self.job, self.cfg = job, job.config
        self.device = torch.device(self.cfg.device)
        self.atol, self.rtol = job.tolerance or self.cfg.tolerances.get(job.dtype, (1e-4, 1e-4))
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
        self.context_stuck = False  # a timed call's wait never ended: the judge's GPU context is lost (clock.py)
        self.calls_without_launch = 0
        self.ungated: list[str] = []
        self.own_names: set[str] = set()  # the candidate's kernel names (its runner's evidence, for the profiler)
        self.poison_bytes = 1 << 20
        self.inspect: Callable[[Any], None] | None = None  # the "call" checks, installed by the pipeline
        # compile and run limits of this job's requests (judge/budget.py): the runners' compile segments spend it
        self.budget = Budget(compile_left_s=self.cfg.compile_timeout_s)
        self.limits = Limits(self.cfg, self.device, self.budget)
        for runner in (cand, ref):
            if runner is not None:  # (None: a JudgeRun made for its seeds or inputs alone)
                runner.budget = self.budget
        self.module = loading.load_reference(job.task_source, job.sizes)  # trusted task code: inputs, init args
        # a fresh 128-bit key per job (judge/seeds.py); 0: the public, reproducible formula
        self.cast = dtype_of(self.cfg.precision)  # the job's precision: inputs and both models cast to it
        self.secret = SecretInputs(self.module, self.cfg.seed,
                                   secrets.token_bytes(16) if self.cfg.secret_seeds else 0, self.device, self.cast)
        self.out_specs: dict[str, tuple[list[Spec], list[Any]]] = {}  # model key -> (tensor specs, value outputs)
        self.clock: Any = None
        self.oracle = Oracle(self)  # the float64 oracle and the error budget (judge/oracle.py)

    @property
    def timed_model(self) -> str:
        """What the candidate is timed against: the task's `Baseline` when it defines one, else `Model`."""
        return "timed" if "timed" in self.out_specs else "main"

    def seed(self, stream: str, i: int = 0) -> int:
        return self.secret.seed(stream, i)

    def inputs(self, seed: int, module: Any = None, scale: float | None = None) -> list[Any]:
        return self.secret.make(seed, module, scale)

    def init_inputs(self, module: Any = None) -> list[Any]:
        return self.secret.init(module)

    def deadline(self, stage: str | None = None) -> float:
        return self.limits.deadline(stage or self.stage)

    def fail(self, error: dict[str, Any], side: Side) -> None:
        outcome.runner_error(self, error, side)

    # ---- shared buffers ------------------------------------------------------------------------------------------
    def slot(self, side: Side, name: str, specs: list[Spec]) -> Arena:
        """The side's arena `name` with these specs (re-shared with its runner when the specs change)."""
        arena = side.slots.get(name)
        if arena is None or arena.specs != specs:
            if arena is not None:
                arena.close()
            arena = Arena(specs, self.device)
            descriptor, fds = arena.descriptor()
            side.runner.share(arena)
            side.slots[name] = arena  # (closed with the side, attached or not)
            reply = side.runner.request("bind", deadline=self.deadline(), stage=self.stage, slot=name,
                                        descriptor=descriptor, fds=fds)
            if "error" in reply:  # (unchecked, a runner that could not attach failed its next call: KeyError 'in')
                self.fail({**reply["error"], "message": "the runner could not attach the judge's buffers: "
                           + str(reply["error"].get("message", ""))}, side)
        return arena

    def place_inputs(self, side: Side, values: list[Any], slot: str = "in",
                     staged: bool = False) -> tuple[Arena, list[dict], Callable[[], None]]:
        """The side's input buffers and the call's description of them, and what writes the values into them: at
        once, or (`staged`) when the clock calls it, after its start, so that no work can begin on them earlier."""
        arena = self.slot(side, slot, [Spec.of(v) for v in values if isinstance(v, torch.Tensor)])
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
        """Call `model` on `side` with these inputs; returns the snapshotted outputs and the evidence. A candidate
        call is inspected by the "call" checks (`inspect`); outputs are compared by the caller."""
        arena_in, spec, stage = self.place_inputs(side, values, slot, staged=timed)
        arena_out = self.slot(side, "out_" + model, self.out_specs[model][0]) if model in self.out_specs else None
        fields = dict(model=model, inputs=spec, slot_in=slot, slot_out=("out_" + model) if arena_out else None,
                      stage=self.stage, **flags)
        poison = self.poison_bytes if side is self.cand else 0

        def ready() -> None:  # unwritten outputs read as the fill, on the first take and on a retake alike
            for t in arena_out.tensors if arena_out is not None else []:
                fill_unwritten(t)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)

        def take() -> tuple[Any, dict]:
            ready()  # the runner's garbage collection and NaN poisoning come before the clock starts
            side.runner.request("collect", deadline=self.deadline(), stage=self.stage, poison=poison)
            return self.clock.time(side.runner, fields, self.limits.call_deadline(), stage=stage)

        t0 = time.perf_counter()
        if timed:
            sample, evidence = self.clock.timed(take) if retake else take()  # (a reading that is not kept: once)
        else:
            ready()
            sample, evidence = None, side.runner.request("call", deadline=self.limits.call_deadline(),
                                                         **({"poison": poison} if poison else {}), **fields)
        if side is self.ref and not timed:
            self.limits.ref_ms = min(self.limits.ref_ms or float("inf"), (time.perf_counter() - t0) * 1e3)
        if "error" in evidence:
            self.fail(evidence["error"], side)
        result = Call([t.clone() for t in arena_out.tensors] if arena_out is not None else [], evidence, sample)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        if model in self.out_specs:
            result.mismatch = outputs.structure_mismatch(self.out_specs[model], evidence, self.device,
                                                         self.job.allow_precision)
        if side is self.cand:
            self._inspect(result, arena_in, values)
        if model in self.out_specs:
            result.outputs = outputs.assemble(result.outputs, evidence)
        return result

    def _inspect(self, result: Call, arena_in: Arena, values: list[Any]) -> None:
        if self.inspect is None:  # fail closed: no candidate call goes unchecked
            raise RuntimeError("a candidate call before the judge's checks were installed")
        intact = compare.tensors_equal(list(arena_in.tensors), [v for v in values if isinstance(v, torch.Tensor)])
        if self.compiled and not result.evidence.get("launches"):
            self.calls_without_launch += 1
        self.inspect(Called(result.evidence, intact, result.mismatch))

    def learn_outputs(self, model: str, evidence: dict[str, Any]) -> None:
        """The reference's output structure (trusted): the shape of every buffer the judge shares from now on."""
        self.out_specs[model] = outputs.learn(evidence)
        self.poison_bytes = max(self.poison_bytes, sum(s.nbytes for s in self.out_specs[model][0]))

    # ---- bookkeeping ---------------------------------------------------------------------------------------------
    def timed(self, name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            self.stage_ms[name] = round((time.perf_counter() - t0) * 1e3, 3)

    def close(self) -> None:
        for side in (self.cand, self.ref):
            side.close()
            if side.runner is not None:
                side.runner.budget = None
        if self.budget.hold is not None:
            self.budget.hold.let_go()
