"""Environment configuration: one dataclass, filled from a preset file in envs/ and explicit arguments."""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernel_gym.backends import CHOICES as BACKENDS
from kernel_gym.errors import ConfigError, UnknownPresetError
from kernel_gym.eval.job import EvalConfig
from kernel_gym.paths import data_dir

DEVICES = ("auto", "cpu", "cuda")


@dataclass(kw_only=True)
class EnvConfig:
    """Everything `gym.make("KernelRefine-v0", ...)` accepts (besides `evaluator` and `summarizer`)."""

    task: str | list[str] = "level1/relu"
    """A task id, a path to a KernelBench-format file, a list of them, or "suite:<name>" (sampled at reset)."""
    backend: str = "auto"
    """"triton", "cuda" (load_inline), "cuda_raw" (NVRTC kernels via kernel_gym.cuda_raw), "helion" (`@helion.kernel`
    functions, compiled by Helion into Triton; the optional extra `kernel-gym[helion]`), "cute_dsl" (CuTe DSL,
    `kernel-gym[cute_dsl]`) and "tilelang" (`kernel-gym[tilelang]`), these two on a GPU only (kernel_gym.backends),
    or "auto" (detected from each response's code)."""
    device: str = "auto"
    """"cuda", "cpu" or "auto" (cuda when available)."""
    max_turns: int = 8
    """Refinement turns per episode; the episode is truncated after the last."""
    score: str | dict | Callable = "kevin"
    """A registered score name (kernel_gym.rewards.list_scores()), a dict {"name": ..., **params} (a TOML table in a
    preset), or a callable TurnSignals -> float."""
    aggregation: str = "sum"
    """How per-turn scores become returns: "sum" or "max" (kernel_gym.rewards.aggregate)."""
    gamma: float = 0.4
    """Discount of the look-ahead return."""
    reward_mode: str = "score"
    """What `step` returns as reward: "score" (this turn's score) or "return" (0, then R_1 at the last step)."""
    checks: str = "standard"
    """Anti-hack preset: "strict", "kevin-strict", "standard" or "permissive"."""
    log_dir: str | None = None
    """Folder for the JSONL trajectory log (one record per step, fsynced); None disables it."""
    size: str | dict = "auto"
    """Input sizes: "auto" (CPU sizes on cpu, full on cuda), "full", "cpu", or a dict of size globals."""
    keep_kernels: int | None = None
    """Show the kernels of only the last k turns in the observation (None: all that fit the budget)."""
    max_obs_chars: int = 64_000
    """Character budget of an observation; older turns are shortened, then dropped, to fit."""
    max_code_chars: int = 32_000
    """Longest accepted code block."""
    max_response_chars: int = 1_000_000
    """Longest accepted response."""
    summary_chars: int = 400
    """Budget of each earlier turn's reasoning summary."""
    correctness_trials: int = 3
    """Fresh-input correctness trials per step."""
    precision: str | None = None
    """"fp32", "fp16" or "bf16": the task's floating inputs and Model's (and ModelNew's) parameters cast to it, as
    KernelBench's `precision` option; tolerances, the error budget and the prompt follow. None: the task's own."""
    error_budget_k: float = 8.0
    """Correct means as accurate as the reference: each output's error against a float64 oracle at most k times the
    reference's own fp32 error plus a floor (docs/evaluation.md, "Correctness"). Smaller is stricter."""
    timing_trials: int | None = None
    """Timed rounds per side (None: 10 on cuda, then adaptive up to `timing_max_trials`; 3 on cpu)."""
    timing_max_trials: int | None = None
    """Most timed rounds per side (None: 300 on cuda when `timing_trials` is None, else `timing_trials`). Rounds
    past the minimum go on until both medians' relative standard error is under 0.4 % (or 3 s are spent)."""
    launch_gate: bool = True
    """cuda timing: a GPU-side gate before each timed call hides host launch latency on both sides (docs/evaluation.md,
    "Timing"). False: readings include launch latency, as KernelBench's do."""
    compile_timeout_s: float = 300.0
    """Limit on importing the candidate (load_inline/nvcc and NVRTC builds run here). docs/evaluation.md, "Outcomes"."""
    run_timeout_s: float = 120.0
    """Limit on everything after the import, together: constructing ModelNew and its first call (Triton JIT),
    correctness and timing."""
    workers: int = 1
    """Sandbox worker processes of the default local evaluator."""
    ranker: str | dict | Callable | None = None
    """A ranker model rating correct kernels as the `ranker` signal: a callable, a registered name, or
    "module:function" (kernel_gym.preference.ranker; docs/preference.md)."""
    judge: str | dict | Any | None = None
    """An LLM judge rating correct kernels as the `judge` signal and review flag: "openai:URL", "hf:MODEL", a dict
    {"policy": ..., "timeout_s": ..., "cache_dir": ...}, or None (kernel_gym.preference.judge)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys a preset file sets that later features read (kept, not interpreted here)."""

    def validate(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.device not in DEVICES:
            raise ConfigError(f"device must be one of {DEVICES}, got {self.device!r}")
        if self.max_turns < 1:
            raise ConfigError(f"max_turns must be >= 1, got {self.max_turns}")
        if self.aggregation not in ("sum", "max"):
            raise ConfigError(f"aggregation must be 'sum' or 'max', got {self.aggregation!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ConfigError(f"gamma must be in [0, 1], got {self.gamma}")
        if not self.error_budget_k > 0:
            raise ConfigError(f"error_budget_k must be > 0, got {self.error_budget_k}")
        if self.reward_mode not in ("score", "return"):
            raise ConfigError(f"reward_mode must be 'score' or 'return', got {self.reward_mode!r}")
        from kernel_gym.checks import get_preset
        from kernel_gym.rewards import get_score
        from kernel_gym.tasks.precision import dtype_of

        dtype_of(self.precision)

        get_preset(self.checks)
        get_score(self.score)

    def eval_config(self, *, device: str, seed: int) -> EvalConfig:
        """The evaluation config of one step's job: every field in `EVAL_FIELDS` carried over as it is, on the
        resolved `device` (this config's may be "auto") with the step's `seed`."""
        return EvalConfig(device=device, seed=seed, **{name: getattr(self, name) for name in EVAL_FIELDS})


EVAL_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(EnvConfig)
    if f.name in {g.name for g in dataclasses.fields(EvalConfig)} and f.name != "device")
"""The EnvConfig fields an evaluation job carries over into its EvalConfig: every field the two share by name
(correctness and timing trials, error budget, launch gate, time limits, checks), all but the device, which the env
resolves first. A field added to both under one name carries over with no further code."""


def list_presets() -> list[str]:
    return sorted(p.stem for p in data_dir("envs").glob("*.toml"))


def load_preset(name: str) -> dict[str, Any]:
    path = data_dir("envs") / f"{name}.toml"
    if not path.is_file():
        raise UnknownPresetError("environment preset", name, list_presets())
    return tomllib.loads(path.read_text())


def make_config(preset: str | None = None, **kwargs: Any) -> EnvConfig:
    """A preset's values, overridden by explicit keyword arguments; unknown keys raise."""
    values = load_preset(preset) if preset else {}
    values.update(kwargs)
    known = {f.name for f in dataclasses.fields(EnvConfig)}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise ConfigError(f"unknown argument(s) {unknown}; known: {sorted(known)}")
    extra = {k: values.pop(k) for k in list(values) if k not in known}
    config = EnvConfig(**values)
    config.extra.update(extra)
    config.validate()
    return config
