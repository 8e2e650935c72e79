"""What the sandbox is asked to do: one candidate against one task, under one evaluation config."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

# Per-dtype tolerances (atol, rtol), KernelBench's current values: tight for fp32 so that a silent
# drop to tf32/fp16 fails, looser for half types whose own rounding is ~1e-3.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-4),
    "float64": (1e-6, 1e-6),
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-2, 1e-2),
}
# The fewest timed rounds per side on cuda before the adaptive stop may end timing: with the launch gate, 10 rounds'
# medians already meet `timing_rel_se` for steady kernels (benchmarks/RESULTS.md), and noisier ones go on.
MIN_ROUNDS_CUDA = 10


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """How a candidate is evaluated. Every field has a default fit for its device."""

    device: str = "cpu"
    """"cpu" (Triton interpreter, wall-clock timing) or "cuda" (events, L2 flush)."""
    correctness_trials: int = 3
    """Fresh-input trials, each from its own seed, compared to the reference."""
    timing_trials: int | None = None
    """Timed rounds per side; None picks 10 on cuda (then adaptive) and 3 on cpu. With `timing_max_trials` above it, a
    minimum."""
    timing_max_trials: int | None = None
    """Most timed rounds per side. None: 300 on cuda when `timing_trials` is None (adaptive), else `timing_trials`
    (a fixed count). Between the two, rounds go on until both medians are known to `timing_rel_se`."""
    timing_rel_se: float = 0.004
    """Adaptive stop: the estimated relative standard error of each side's median (robust: from its MAD)."""
    timing_budget_s: float = 3.0
    """Adaptive stop: wall-clock seconds of timed rounds after which no further round is started."""
    warmup: int = 3
    """Untimed calls of each side before timing."""
    tolerances: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    """dtype name -> (atol, rtol) for the elementwise check."""
    max_rel_l2: float = 1e-2
    """Bound on ||out - ref|| / ||ref||: stops near-zero or degenerate outputs passing a loose atol."""
    error_budget_k: float = 8.0
    """Correctness as an error budget (kernel_gym.judge.oracle): each output's error against a float64 oracle may be
    at most k times the reference's own fp32 error plus a floor (4e-5 for float32). Smaller is stricter."""
    precision: str | None = None
    """"fp32", "fp16" or "bf16" (KernelBench's option): the task's floating inputs, init inputs and both models'
    parameters cast to it in the judge and the runners; the job's dtype is then that precision's. None: the task's."""
    oracle: bool = True
    """Judge by the float64 oracle where the task's Model runs in float64; False: the fixed atol/rtol rule."""
    oracle_max_s: float = 10.0
    """A float64 call slower than this (its first, measured once per job) leaves the job to the fixed rule."""
    compile_timeout_s: float = 300.0
    """Import of the candidate (load_inline/nvcc and NVRTC builds run here), constructing ModelNew and its first call
    (Triton JIT): each of these requests has this long (docs/evaluation.md, "Outcomes")."""
    run_timeout_s: float = 120.0
    """Everything after the first call, together: correctness checks and timing."""
    call_timeout_s: float | None = None
    """Longest single call of the solution after its first; None follows the reference's call time: max(2 s, 50x)
    on cuda, max(30 s, 1000x) on cpu (interpreted Triton is slow). A call past it is a `timeout` at once."""
    seed: int = 0
    """Base seed: trial i uses seed + 1000 * (i + 1); timing rounds use further seeds."""
    secret_seeds: bool = True
    """Salt every input seed with a per-job secret, so no solution can precompute outputs for known seeds."""
    check_alt_shape: bool = True
    """Also check correctness at the task's second shape (its KERNEL_GYM["alt"] sizes) when it has one."""
    checks: str = "standard"
    """Anti-hack preset name (see kernel_gym.checks)."""
    l2_flush_mb: int = 256
    """Size of the buffer written between timed calls on cuda to evict L2."""
    launch_gate: bool = True
    """cuda: queue a short GPU-side wait before each timed call (both sides), so the reading is the call's GPU
    work and not the host's launch latency. False: KernelBench-style readings that include launch latency."""

    @property
    def n_timing(self) -> int:
        if self.timing_trials is not None:
            return self.timing_trials
        return MIN_ROUNDS_CUDA if self.device == "cuda" else 3

    @property
    def max_timing(self) -> int:
        if self.timing_max_trials is not None:
            return max(self.timing_max_trials, self.n_timing)
        return 300 if self.device == "cuda" and self.timing_trials is None else self.n_timing

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalConfig:
        d = dict(d)
        d["tolerances"] = {k: tuple(v) for k, v in d.get("tolerances", DEFAULT_TOLERANCES).items()}
        return cls(**d)


@dataclass(frozen=True, kw_only=True)
class EvalJob:
    """One candidate to evaluate. Plain data, sent to a worker as JSON.

    Only `task_id` and `code` are needed: what is left out follows the task and the config's device, as in the env
    (`gym.make(size="auto")`): the task's source is loaded from its id, the backend detected from the code, and the
    sizes are the task's small CPU sizes on `device="cpu"` (full sizes on "cuda"), with its second shape, dtype,
    precision contract and tolerance.

    >>> job = EvalJob(task_id="level1/relu", code=open("my_relu.py").read())        # doctest: +SKIP
    >>> kernel_gym.evaluate_many([job], workers=2)                                    # doctest: +SKIP
    """

    task_id: str
    code: str
    task_source: str = ""
    """The reference program; "" loads it from `task_id` (`kernel_gym.tasks.load_task`: an id or a path)."""
    backend: str = "auto"
    """"triton", "cuda", "cuda_raw", "helion", "cute_dsl", "tilelang" (these two on cuda only), or "auto": detected
    from the code (Triton when nothing says otherwise)."""
    sizes: dict[str, Any] | None = None
    """Overrides of the task's size globals ({} = the file's own, full sizes); None: the task's sizes for the
    config's device (its KERNEL_GYM["cpu"] sizes on cpu, full sizes on cuda) and its second shape as `alt_sizes`."""
    alt_sizes: dict[str, Any] | None = None
    """A second shape for the specialisation check; None: none (or, with `sizes=None`, the task's own)."""
    dtype: str | None = None
    """The task's dtype; None: read from the task."""
    allow_precision: bool | None = None
    """Whether the task allows fp16/bf16/tf32 inside its fp32 contract; None: read from the task."""
    tolerance: tuple[float, float] | None = None
    """The task's own (atol, rtol), overriding the per-dtype default; None: the task's, if it sets one."""
    outlier_fraction: float | None = None
    """The fraction of each output's elements the error budget may leave out of its worst-element measure (discrete
    choices such as top-k routing: `Task.outlier_fraction`); None: the task's (0 unless it sets one)."""
    config: EvalConfig = field(default_factory=EvalConfig)

    def __post_init__(self) -> None:
        if self.backend == "auto":
            from kernel_gym.actions import detect_backend

            object.__setattr__(self, "backend", detect_backend(self.code) or "triton")
        if self.task_source and None not in (self.sizes, self.dtype, self.allow_precision, self.outlier_fraction):
            return  # fully given (as job_for and from_dict do): nothing to read
        from kernel_gym.tasks import load_task
        from kernel_gym.tasks.precision import at_precision
        from kernel_gym.tasks.task import parse_task

        task = parse_task(self.task_id, self.task_source) if self.task_source else load_task(self.task_id)
        task = at_precision(task, self.config.precision)
        object.__setattr__(self, "task_source", task.source)
        if self.sizes is None:
            object.__setattr__(self, "sizes", task.sizes_for(self.config.device))
            if self.alt_sizes is None:
                object.__setattr__(self, "alt_sizes", task.alt_sizes_for(self.config.device))
        if self.dtype is None:
            object.__setattr__(self, "dtype", task.dtype)
        if self.allow_precision is None:
            object.__setattr__(self, "allow_precision", task.allow_precision)
        if self.tolerance is None:
            object.__setattr__(self, "tolerance", task_tolerance(task))
        if self.outlier_fraction is None:
            object.__setattr__(self, "outlier_fraction", task.outlier_fraction)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalJob:
        d = dict(d)
        d["config"] = EvalConfig.from_dict(d["config"])
        if d.get("tolerance") is not None:
            d["tolerance"] = tuple(d["tolerance"])
        return cls(**d)


def task_tolerance(task: Any) -> tuple[float, float] | None:
    """The task's own (atol, rtol) when its metadata sets either, else None (the per-dtype default applies)."""
    meta = task.metadata
    if "atol" in meta or "rtol" in meta:
        return float(meta.get("atol", 1e-4)), float(meta.get("rtol", 1e-4))
    return None


def job_for(task: Any, code: str, *, backend: str, config: EvalConfig, size: str = "auto") -> EvalJob:
    """The job for `code` answering a `kernel_gym.tasks.Task`: its sizes for the config's device (`size` as in
    `gym.make(size=...)`), its second shape, dtype (the config's precision's, when it sets one), precision contract
    and own tolerance."""
    from kernel_gym.tasks.precision import at_precision

    task = at_precision(task, config.precision)
    tolerance = task_tolerance(task)
    return EvalJob(task_id=task.id, task_source=task.source, code=code, backend=backend,
                   sizes=task.sizes_for(config.device, size),
                   alt_sizes=task.alt_sizes_for(config.device) if size in ("auto", "cpu", "full") else None,
                   dtype=task.dtype, allow_precision=task.allow_precision, tolerance=tolerance,
                   outlier_fraction=task.outlier_fraction, config=config)
