"""KernelRefineEnv: multi-turn GPU-kernel refinement as a Gymnasium environment."""

from __future__ import annotations

import time
import uuid
import warnings
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from kernel_gym.actions import ParsedAction, parse_action
from kernel_gym.backends import cpu_refusal, gpu_only
from kernel_gym.config import EnvConfig, make_config
from kernel_gym.device import CPU_BF16, blind_spots, local_device
from kernel_gym.errors import BackendUnavailableError, ConfigError, EpisodeEndedError
from kernel_gym.eval.evaluator import Evaluator, evaluate_job
from kernel_gym.eval.job import EvalConfig, EvalJob, job_for, task_tolerance
from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.feedback import (
    Summarizer,
    SummaryResult,
    TurnView,
    make_summarizer,
    render_feedback,
    render_observation,
    render_prompt,
    status_line,
    summarize_turn,
)
from kernel_gym.judge.local import LocalEvaluator
from kernel_gym.rewards import (
    TurnSignals,
    aggregate,
    get_score,
    plan_code_info,
    score_terms,
    step_reward,
    task_difficulty,
)
from kernel_gym.spaces import FreeText
from kernel_gym.tasks import Task, list_tasks, load_task
from kernel_gym.tasks.precision import at_precision, dtype_of, native_bf16_on_cpu
from kernel_gym.trajectory import TrajectoryLog

SCORING_TEXT = {
    "kevin": "Each turn scores 0.3 for a correct solution plus its speedup over the reference (0 if incorrect or if any\n"
             "anti-hacking check fires).",
}


@dataclass(frozen=True)
class Turn:
    """One step of an episode, as recorded (the typed form of `info`)."""

    turn: int
    parsed: ParsedAction
    result: EvalResult
    score: float
    feedback: str
    summary: str
    reward_info: dict[str, Any] = field(default_factory=dict)  # reward_terms (and plan_code) for info
    summary_source: str = "extractive"
    summary_error: str | None = None


class KernelRefineEnv(gym.Env):
    """Refine a GPU kernel over several turns against a PyTorch reference.

    ## Description
    Each episode is one task: a PyTorch reference program in KernelBench format. The agent answers with its
    reasoning and a `ModelNew` in a fenced code block whose forward runs its own Triton or CUDA kernels.
    Each step extracts the code, runs static anti-hack checks, then — in a separate sandbox worker process —
    compiles it, checks it on fresh random inputs against the reference, times both, and runs dynamic checks.

    ## Action Space
    `str`: the whole model response. The code is its last fenced code block; the rest is the reasoning.

    ## Observation Space
    `str`: the task prompt, then for each earlier turn a summary of its reasoning, its kernel and its feedback,
    then the newest feedback, within `max_obs_chars`.

    ## Rewards
    `reward` is this turn's score, Kevin's by default: `S = 0.3·1{correct} + 1{correct}·speedup`
    (speedup = baseline_ms / runtime_ms), 0 whenever an anti-hack check fires. At the last step
    `info["returns"] = aggregate(scores, gamma, aggregation)`: sum `R_t = Σ_{i≥t} γ^(i−t) s_i` or
    max `R_t = max_{i≥t} γ^(i−t) s_i` (default sum, γ = 0.4). With `reward_mode="return"` every step's reward is 0
    except the last, which is `R_1` (so the sum of an episode's rewards is its return); `info["score"]` and
    `info["returns"]` are the same in both modes. `info["reward_terms"]` holds the score's named terms; the
    `plan_code` score adds `info["plan_code"]` (plan/code spans and their rewards). See docs/rewards.md.

    ## Episode End
    - Truncation: after `max_turns` steps (`info["episode_end"] = "max_turns"`).
    - Termination: never; a correct kernel can always be made faster.

    ## Arguments
    | name | type | default | meaning |
    |---|---|---|---|
    | task | str or list | "level1/relu" | task id, KernelBench file path, list, or "suite:level1" |
    | backend | str | "auto" | "triton", "cuda", "cuda_raw", "helion", "cute_dsl", "tilelang" or "auto" |
    | device | str | "auto" | "cuda", "cpu" or "auto" |
    | max_turns | int | 8 | turns per episode |
    | score | str or callable | "kevin" | per-turn score |
    | aggregation | str | "sum" | "sum" or "max" |
    | gamma | float | 0.4 | discount of returns |
    | reward_mode | str | "score" | "score" (reward = the turn's score) or "return" (0, then R_1 at the end) |
    | checks | str | "standard" | anti-hack preset |
    | log_dir | str or None | None | JSONL trajectory log folder |
    | preset | str or None | None | a file in envs/ (e.g. "kevin"); explicit arguments override it |
    | evaluator | object or None | None | anything with evaluate(job) and close(); a local pool by default |
    | summarizer | callable, dict or None | None | reasoning -> summary: extractive by default; a ModelSummarizer (the policy) or a dict {"base_url", "model"} (an OpenAI-compatible endpoint) |
    | tokenizer | HF tokenizer or None | None | gives token spans in info["plan_code"] (plan_code score) |
    Every other field of `kernel_gym.config.EnvConfig` may be passed too.

    ## Version History
    - v0: initial release.

    >>> import gymnasium as gym, kernel_gym
    >>> env = gym.make("KernelRefine-v0", task="level1/relu", device="cpu", max_turns=2)
    """

    # "ansi" renders the current observation as text; render_fps only paces recorders (one frame per step)
    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(self, *, preset: str | None = None, evaluator: Evaluator | None = None,
                 summarizer: Summarizer | dict | None = None, render_mode: str | None = None, tokenizer: Any = None,
                 **kwargs: Any):
        self.config: EnvConfig = make_config(preset, **kwargs)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ConfigError(f"render_mode must be None or one of {self.metadata['render_modes']}, "
                              f"got {render_mode!r} (the observation is text: render_mode='ansi' returns it)")
        _check_tasks(self.config.task)  # an unknown id, a missing file or a malformed task fails here, not at reset
        self.tokenizer = tokenizer
        self.render_mode = render_mode
        device = self.config.device
        if device == "auto" and getattr(evaluator, "device", None) in ("cpu", "cuda"):
            # with a given evaluator (Ray, a service) follow its device: a CPU-only trainer using GPU evaluation
            # workers gets GPU jobs without having to say device="cuda" (a service is asked only here)
            device = evaluator.device
        if evaluator is None or isinstance(evaluator, LocalEvaluator) or device == "auto":
            device = local_device(device)  # workers on this machine: "cuda" without a GPU is refused now, in one line
        self.device = device
        if device == "cpu" and gpu_only(self.config.backend):  # no CPU backend for it: said now, in one line
            raise BackendUnavailableError(cpu_refusal(self.config.backend))
        if device == "cpu" and dtype_of(self.config.precision) == "bfloat16":  # said once, at make
            warnings.warn(f"precision='bf16' on cpu: {CPU_BF16}", UserWarning, stacklevel=2)
        self._native_bf16_said = False  # a natively bf16 task on cpu: said once, at its first reset
        self.score_fn = get_score(self.config.score)
        self.summarizer = make_summarizer(summarizer, self.config.summary_chars)
        self._owns_evaluator = evaluator is None
        self.evaluator = evaluator or LocalEvaluator(self.device, workers=self.config.workers)
        if isinstance(self.evaluator, LocalEvaluator):
            self.evaluator.start()
        self.observation_space = FreeText(self.config.max_obs_chars)
        self.action_space = FreeText(self.config.max_response_chars)
        self.log = TrajectoryLog(self.config.log_dir) if self.config.log_dir else None
        self.critics = _critics(self.config.ranker, self.config.judge)  # None unless configured
        self.task: Task | None = None
        self.turns: list[Turn] = []
        self.prompt = ""
        self.last_obs = ""  # the observation the next step's action answers (logged as its "prompt")
        self.episode_id = ""
        self._done = True

    # ---- gymnasium API -------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        self.task = at_precision(load_task(options.get("task") or self._pick_task()), self.config.precision)
        note = self.device == "cpu" and self.config.precision is None and native_bf16_on_cpu(self.task)
        if note and not self._native_bf16_said:
            self._native_bf16_said = True
            warnings.warn(note, UserWarning, stacklevel=2)
        self.turns, self._done = [], False
        self.episode_id = uuid.uuid4().hex
        atol, rtol = self._tolerance()
        self.prompt = render_prompt(self.task, backend=self.config.backend, checks=self.config.checks,
                                    device=self.device, scoring=self._scoring_text(), atol=atol, rtol=rtol)
        obs = self._fit(self.prompt)
        self.last_obs = obs
        return obs, {"task": self.task.id, "episode_id": self.episode_id, "device": self.device,
                     "max_turns": self.config.max_turns}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.task is None:
            raise EpisodeEndedError("step() before reset(): call reset() first")
        if self._done:
            raise EpisodeEndedError(f"the episode has ended (max_turns={self.config.max_turns} reached): "
                                    "call reset() before step()")
        t0 = time.perf_counter()
        parsed = parse_action(action, backend=self.config.backend, max_response_chars=self.config.max_response_chars,
                              max_code_chars=self.config.max_code_chars)
        parse_ms = (time.perf_counter() - t0) * 1e3
        if parsed.ok:
            result = evaluate_job(self._job(parsed), self.evaluator)
        else:
            result = EvalResult(outcome=Outcome.FORMAT_ERROR, message=parsed.error or "")
        result = result.replace(stage_ms={"parse": round(parse_ms, 3), **result.stage_ms})
        critic_info: dict[str, Any] = {}
        if self.critics is not None:  # ranker/judge signals join the measured ones (docs/preference.md)
            extra, critic_info = self.critics.assess(self.task, parsed.code, action if isinstance(action, str) else "",
                                                     result, self.turns, checks=self.config.checks)
            result = result.replace(signals={**result.signals, **extra})
        response_chars = len(action) if isinstance(action, str) else 0
        code_chars = parsed.code_span[1] - parsed.code_span[0] if parsed.code_span else 0
        signals = TurnSignals(format_ok=parsed.ok, compiled=result.compiled, correct=result.correct and not result.hacks,
                              speedup=result.speedup, hacks=result.hacks, response_chars=response_chars,
                              signals=dict(result.signals), plan_chars=response_chars - code_chars,
                              code_chars=code_chars, difficulty=task_difficulty(self.task.metadata, self.task.level))
        score = 0.0 if signals.hacks else float(self.score_fn(signals))  # any hack zeroes every score
        reward_info: dict[str, Any] = {"reward_terms": score_terms(self.score_fn, signals), **critic_info}
        plan_code = plan_code_info(self.score_fn, signals, action, parsed.code_span, self.tokenizer)
        if plan_code is not None:
            reward_info["plan_code"] = plan_code
        feedback = render_feedback(result, code=parsed.code, dtype=self.task.dtype,
                                   allow_precision=self.task.allow_precision)
        summary: SummaryResult = summarize_turn(self.summarizer, parsed.reasoning, self.config.summary_chars)
        turn = Turn(len(self.turns) + 1, parsed, result, score, feedback, summary.text, reward_info,
                    summary.source, summary.error)
        self.turns.append(turn)
        truncated = turn.turn >= self.config.max_turns
        self._done = truncated
        obs = self._observation()
        info = self._info(turn, truncated, step_ms=(time.perf_counter() - t0) * 1e3)
        reward = step_reward([t.score for t in self.turns], last=truncated, gamma=self.config.gamma,
                             mode=self.config.aggregation, reward_mode=self.config.reward_mode)
        if self.log is not None:
            # "prompt" is the observation this action answered (the reset prompt on turn 1): kernel_gym.samples
            # turns each record into a training sample; gamma and aggregation let it recompute returns.
            self.log.write({"episode_id": self.episode_id, "task": self.task.id, "turn": turn.turn,
                            "prompt": self.last_obs, "action": action if isinstance(action, str) else repr(action),
                            "observation": obs, "info": info, "reward": reward, "gamma": self.config.gamma,
                            "aggregation": self.config.aggregation, "time": time.time()})
        self.last_obs = obs
        return obs, reward, False, truncated, info

    def restore(self, steps: list[tuple[str, dict[str, Any]]], *, episode_id: str | None = None) -> str:
        """Continue the episode `reset` began from its logged steps ((response, info) of turns 1..k, k < max_turns),
        as a resumed rollout does: the turns are rebuilt from the log (kernel_gym.history), not evaluated or
        summarized again, and the env's seed stream advances as those steps advanced it. `episode_id`: the logged
        episode's id, kept so that its records and the new ones form one episode. Returns the observation the next
        turn answers."""
        from kernel_gym.history import checked_steps, result_from_info

        if self.task is None or self.turns:
            raise EpisodeEndedError("restore() goes right after reset(), before any step")
        cfg = self.config
        for action, info in checked_steps(steps, task=self.task.id, max_turns=cfg.max_turns):
            parsed = parse_action(action, backend=cfg.backend, max_response_chars=cfg.max_response_chars,
                                  max_code_chars=cfg.max_code_chars)
            if parsed.ok:
                self.np_random.integers(2**31 - 1)  # the seed its evaluation drew (_job)
            self.turns.append(Turn(int(info["turn"]), parsed, result_from_info(info), float(info["score"]),
                                   str(info["feedback"]), str(info.get("reasoning_summary") or ""),
                                   {k: info[k] for k in ("reward_terms", "plan_code") if k in info},
                                   info.get("summary_source") or "extractive", info.get("summary_error")))
        self.episode_id = episode_id or self.episode_id
        self.last_obs = self._observation()
        return self.last_obs

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self._observation() if self.turns else self._fit(self.prompt)
        return None

    def close(self) -> None:
        if self._owns_evaluator and self.evaluator is not None:
            self.evaluator.close()
        if self.log is not None:
            self.log.close()
        if self.critics is not None:
            self.critics.close()
        super().close()

    # ---- pieces --------------------------------------------------------------------------------------
    def _pick_task(self) -> str:
        choices = self.config.task
        if isinstance(choices, str) and choices.startswith("suite:"):
            choices = list_tasks(choices.split(":", 1)[1])
        elif isinstance(choices, str) and choices.startswith("split:"):
            choices = list_tasks(split=choices.split(":", 1)[1])
        if isinstance(choices, (list, tuple)):
            if not choices:
                raise ConfigError("the task list is empty")
            return str(choices[int(self.np_random.integers(len(choices)))])
        return str(choices)

    def _tolerance(self) -> tuple[float, float]:
        return task_tolerance(self.task) or EvalConfig().tolerances.get(self.task.dtype, (1e-4, 1e-4))

    def _scoring_text(self) -> str:
        name = self.config.score if isinstance(self.config.score, str) else "custom"
        doc = SCORING_TEXT.get(name) or (getattr(self.score_fn, "__doc__", "") or "").strip().splitlines()[0:1]
        return doc if isinstance(doc, str) else (doc[0] if doc else "Correct and faster solutions score higher.")

    def _job(self, parsed: ParsedAction) -> EvalJob:
        cfg = self.config
        eval_config = cfg.eval_config(device=self.device, seed=int(self.np_random.integers(2**31 - 1)))
        backend = parsed.backend or (cfg.backend if cfg.backend != "auto" else "triton")
        return job_for(self.task, parsed.code or "", backend=backend, config=eval_config, size=cfg.size)

    def _observation(self) -> str:
        views = [TurnView(t.turn, status_line(t.result), t.summary, t.parsed.code, t.feedback, t.parsed.code is not None)
                 for t in self.turns]
        return self._fit(render_observation(self.prompt, views, max_turns=self.config.max_turns,
                                            max_chars=self.config.max_obs_chars, keep_kernels=self.config.keep_kernels))

    def _fit(self, text: str) -> str:
        limit = self.config.max_obs_chars
        return text if len(text) <= limit else text[: limit - 40] + "\n... [observation cut to its budget]\n"

    def _info(self, turn: Turn, truncated: bool, step_ms: float) -> dict[str, Any]:
        r = turn.result
        info: dict[str, Any] = {
            "turn": turn.turn, "task": self.task.id, "backend": r.backend if turn.parsed.ok else turn.parsed.backend,
            "format_ok": turn.parsed.ok, "compiled": bool(r.compiled), "correct": bool(r.correct and not r.hacks),
            "speedup": r.speedup, "runtime_ms": r.timing.runtime_ms if r.timing else None,
            "baseline_ms": r.timing.baseline_ms if r.timing else None, "score": turn.score, "hacks": list(r.hacks),
            "error": None if r.correct else r.outcome.value, "feedback": turn.feedback,
            "outcome": r.outcome.value, "message": r.message, "hack_details": list(r.hack_details),
            "stage_ms": {**r.stage_ms, "step": round(step_ms, 3)}, "signals": dict(r.signals),
            "reasoning_summary": turn.summary, "summary_source": turn.summary_source,
            "summary_error": turn.summary_error, "code_span": list(turn.parsed.code_span) if turn.parsed.code_span else None,
            "timing": None if r.timing is None else {"runtime_cv": r.timing.runtime_cv, "baseline_cv": r.timing.baseline_cv,
                                                     "trials": r.timing.trials, "method": r.timing.method,
                                                     "speedup_rel_se": r.timing.speedup_rel_se,
                                                     "gate_ms": r.timing.gate_ms,
                                                     "resolution_ms": r.timing.resolution_ms},
            "episode_id": self.episode_id, "device": self.device, "worker_recycled": r.worker_recycled,
            "infra_failure": r.infra_failure, "correctness": r.correctness, "isolation": dict(r.isolation),
            "blind_spots": blind_spots(self.device, self.task.dtype),
            **turn.reward_info,
        }
        if truncated:
            scores = [t.score for t in self.turns]
            info["scores"] = scores
            info["returns"] = aggregate(scores, self.config.gamma, self.config.aggregation)
            info["episode_end"] = "max_turns"
        return info


def _auto_device() -> str:
    """"cuda" when a GPU is visible, else "cpu" (kept for callers of the old name; see kernel_gym.device)."""
    return local_device("auto")



def _critics(ranker: Any, judge: Any) -> Any:
    """The ranker and LLM judge of kernel_gym.preference, imported only when one is configured (the core imports no
    edge module)."""
    if ranker is None and judge is None:
        return None
    from kernel_gym.preference.online import Critics

    return Critics.from_config(ranker, judge)


def _check_tasks(spec: str | list[str] | tuple[str, ...]) -> None:
    """Load every task `spec` names (ids and paths are parsed, not run), so that mistakes surface at construction."""
    if isinstance(spec, str) and spec.startswith("suite:"):
        list_tasks(spec.split(":", 1)[1])  # an unknown suite raises
    elif isinstance(spec, str) and spec.startswith("split:"):
        list_tasks(split=spec.split(":", 1)[1])
    elif isinstance(spec, (list, tuple)):
        if not spec:
            raise ConfigError("the task list is empty")
        for task_id in spec:
            load_task(task_id)
    else:
        load_task(spec)
