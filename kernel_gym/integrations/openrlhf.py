"""OpenRLHF adapter: train on KernelRefine with per-turn discounted returns (Kevin's recipe) or summed rewards.

This file is itself a valid `--train.agent_func_path` (OpenRLHF loads it by path and instantiates `AgentExecutor`
with no arguments); `kernel-gym openrlhf-agent-path` prints its path. Guide: docs/openrlhf.md.

- `KernelRefineAgent` (an OpenRLHF `AgentInstanceBase`): one episode of a `KernelRefineEnv` built from the
  prompt's label (a JSON object with `task` and any `gym.make` keyword). `step` returns the turn's reward tensor,
  `scores` (best turn score so far), `environment_feedback` (the newest feedback as a follow-up user turn),
  `done` and numeric `extra_logs`. Evaluation runs off the event loop (a thread pool) on the process's
  shared evaluator (a local sandbox pool, Ray workers or `kernel-gym serve`, see `shared_evaluator`), never in
  the vLLM actor's own process.
- `KernelRefineExecutor` (an `AgentExecutorBase`), two modes:
  - "sum": OpenRLHF's stock multi-turn behaviour: the whole episode is one sample (prompt, then per turn the
    response and the feedback as a user turn; only responses are trained on), its reward the sum of the step
    rewards (Σ s_t; with the env's `reward_mode="return"`, R_1).
  - "turns": every turn is its own sample: its prompt is the env's observation for that turn (task + summarized
    history, a fresh conversation), its response the model's answer, its reward the discounted return
    `R_t = kernel_gym.rewards.aggregate(scores, gamma, aggregation)[t]`. `execute` then returns a list of
    samples (turn order); OpenRLHF turns each returned object into one experience, so this mode needs the
    launcher `python -m kernel_gym.integrations.openrlhf_train` which flattens the lists where responses become
    experiences (see that module), and refuses to run without it.

Run-level settings (environment variables of the Ray workers; the launcher forwards every KERNEL_GYM_* variable):

| variable | default | meaning |
|---|---|---|
| KERNEL_GYM_OPENRLHF_MODE | sum | "sum" or "turns" (the launcher defaults it to "turns") |
| KERNEL_GYM_MAX_TURNS | env default (8) | turns per episode |
| KERNEL_GYM_GAMMA | env default (0.4) | γ of the returns |
| KERNEL_GYM_RETURN_MODE | env default (sum) | aggregation of the returns: "sum" or "max" |
| KERNEL_GYM_DEVICE | auto | device the candidates run on (where the evaluator's workers are) |
| KERNEL_GYM_ENV_KWARGS | {} | JSON object of further `gym.make` keywords (e.g. {"preset": "kevin"}) |
| KERNEL_GYM_EVALUATOR | local | "local", "ray[:address]" or "http(s)://host:port" |
| KERNEL_GYM_EVAL_WORKERS | 1 | sandbox workers of a local pool (per vLLM actor process) |
| KERNEL_GYM_EVAL_THREADS | 64 | threads waiting on evaluations at once (per process) |
| KERNEL_GYM_ADVANTAGE | group_all_turns | turns mode: the advantage's group (kernel_gym.integrations.advantage) |

A label's own keys win over these defaults. A label may also hold `seed` (the env's reset seed).
"""

from __future__ import annotations

import json
import logging
import os
from copy import deepcopy
from typing import Any

import torch
from openrlhf.utils.agent import AgentExecutorBase, AgentInstanceBase

from kernel_gym.errors import ConfigError
from kernel_gym.integrations.episodes import Episode, Policy, episode_settings, make_env, play
from kernel_gym.integrations.episodes import parse_label as parse_label  # the one label reader, under this name too
from kernel_gym.integrations.shared_evaluator import offload

logger = logging.getLogger(__name__)

ENV_MODE = "KERNEL_GYM_OPENRLHF_MODE"
ENV_FLATTEN = "KERNEL_GYM_OPENRLHF_FLATTEN"  # set by kernel_gym.integrations.openrlhf_train in every Ray worker
ENV_SUMMARIES = "KERNEL_GYM_POLICY_SUMMARIES"  # "1": the policy summarizes its turns (Kevin; turns mode only)
SUMMARY_TOKENS = 256  # the longest summary the policy is asked for
MODES = ("sum", "turns")
ERROR_CODES = ("none", "format_error", "rejected", "compile_error", "runtime_error", "timeout", "crash", "oom",
               "mismatch", "unsupported")
"""`extra_logs["kernel/error_code"]` is an index into this tuple (0: no error); other codes count as its length."""

_ENV_DEFAULTS = {"KERNEL_GYM_MAX_TURNS": ("max_turns", int), "KERNEL_GYM_GAMMA": ("gamma", float),
                 "KERNEL_GYM_RETURN_MODE": ("aggregation", str), "KERNEL_GYM_DEVICE": ("device", str)}


# ---- labels and settings -------------------------------------------------------------------------------------------
def env_settings(label: Any) -> tuple[dict[str, Any], int | None]:
    """(gym.make keywords, reset seed) for a label: KERNEL_GYM_* defaults, then the label's own keys."""
    defaults: dict[str, Any] = json.loads(os.environ.get("KERNEL_GYM_ENV_KWARGS") or "{}")
    for var, (key, cast) in _ENV_DEFAULTS.items():
        if os.environ.get(var):
            defaults[key] = cast(os.environ[var])
    return episode_settings(label, defaults, "an OpenRLHF label")


def executor_mode(mode: str | None = None) -> str:
    mode = (mode or os.environ.get(ENV_MODE) or "sum").strip()
    if mode not in MODES:
        raise ConfigError(f"{ENV_MODE} must be one of {MODES}, got {mode!r}")
    return mode


def turn_logs(info: dict[str, Any]) -> dict[str, float]:
    """Numeric per-turn metrics (OpenRLHF makes a tensor of each; every sample carries the same keys)."""
    error = info.get("error")
    logs = {"kernel/turn": float(info["turn"]), "kernel/score": float(info["score"]),
            "kernel/format_ok": float(bool(info.get("format_ok"))), "kernel/compiled": float(bool(info.get("compiled"))),
            "kernel/correct": float(bool(info.get("correct"))), "kernel/speedup": float(info.get("speedup") or 0.0),
            "kernel/hacks": float(len(info.get("hacks") or [])),
            "kernel/infra_failure": float(bool(info.get("infra_failure"))),
            "kernel/summary_fallback": float(info.get("summary_source") == "fallback"),
            "kernel/error_code": float(ERROR_CODES.index(error) if error in ERROR_CODES else len(ERROR_CODES)
                                       if error else 0)}
    if "review_flags" in info:  # an LLM judge is configured (for every turn of the run, so the keys stay the same)
        logs["kernel/review_flags"] = float(len(info["review_flags"] or []))
    return logs


# ---- chat formatting -----------------------------------------------------------------------------------------------
class ChatFormat:
    """How a new observation becomes prompt text, and how feedback follows a response in one conversation.

    The dataset prompt shows how the run wraps a user message (OpenRLHF's `--data.apply_chat_template` or
    `--data.input_template`): when it contains the env's reset observation, the text around it is reused for every
    later observation. Follow-ups close the assistant turn and open a user turn using the tokenizer's chat
    template; without a chat-formatted prompt they are plain text.
    """

    def __init__(self, tokenizer: Any = None):
        self.tokenizer = tokenizer
        self.wrapper: tuple[str, str] | None = None  # text before and after the observation in the dataset prompt
        self._breaks: tuple[str, str] | None = None

    def learn(self, prompt: Any, observation: str) -> None:
        if not isinstance(prompt, str) or prompt == observation:
            return
        if observation and observation in prompt:
            before, _, after = prompt.partition(observation)
            self.wrapper = (before, after)
            return
        # Another observation than the prompt's (the label picked a task, or another device): is the prompt
        # the tokenizer's chat template around some user message?
        template = _template_wrapper(self.tokenizer)
        if template and prompt.startswith(template[0]) and prompt.endswith(template[1]):
            self.wrapper = template

    @property
    def chat(self) -> bool:
        return self.wrapper is not None

    def user_turn(self, text: str) -> str:
        """A fresh conversation whose one user message is `text`, ready for the assistant's answer."""
        return f"{self.wrapper[0]}{text}{self.wrapper[1]}" if self.wrapper else text

    def followup(self, text: str, action_end: str | None = None) -> str:
        """Text to append after a response: end of the assistant turn, `text` as a user turn, generation prompt.

        `action_end` is the text of the response's last token when it ended the turn itself (e.g. "<|im_end|>"),
        so the end-of-turn marker is not repeated.
        """
        if not self.chat:
            return f"\n\n{text}\n\n"
        between, after = self._turn_breaks()
        if action_end and between.startswith(action_end):
            between = between[len(action_end):]
        return f"{between}{text}{after}"

    def _turn_breaks(self) -> tuple[str, str]:
        if self._breaks is None:
            self._breaks = _template_breaks(self.tokenizer) or ("\n\n", self.wrapper[1])
        return self._breaks


def _template_wrapper(tokenizer: Any) -> tuple[str, str] | None:
    """(text before, text after) a lone user message in the tokenizer's chat template, with the generation prompt."""
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return None
    mark = "KGUSERMARK"
    try:
        text = tokenizer.apply_chat_template([{"role": "user", "content": mark}], tokenize=False,
                                             add_generation_prompt=True)
    except Exception:  # no usable template: the prompt is then taken as plain text
        return None
    before, found, after = text.partition(mark)
    return (before, after) if found else None


def _template_breaks(tokenizer: Any) -> tuple[str, str] | None:
    """(after an assistant message up to the next user message, after it up to the next answer) from the template."""
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return None
    user, assistant, feedback = "KGUSERMARK", "KGASSISTANTMARK", "KGFEEDBACKMARK"
    messages = [{"role": "user", "content": user}, {"role": "assistant", "content": assistant},
                {"role": "user", "content": feedback}]
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        a, f = text.index(assistant) + len(assistant), text.index(feedback)
    except Exception:  # a template that rejects this conversation: fall back to the dataset prompt's wrapper
        logger.warning("kernel-gym: the tokenizer's chat template could not render a follow-up turn; using plain text")
        return None
    return text[a:f], text[f + len(feedback):]


# ---- the agent -----------------------------------------------------------------------------------------------------
class KernelRefineAgent(AgentInstanceBase):
    """One KernelRefine episode behind OpenRLHF's agent API (reset once, then step per response)."""

    def __init__(self, *, chat: ChatFormat | None = None, evaluator: Any = None, policy_summaries: bool = False):
        self.chat = chat or ChatFormat()
        self.evaluator = evaluator  # None: the process's shared evaluator for the env's device
        self.policy_summaries = policy_summaries  # the executor asks llm_engine for each turn's summary
        self.episode: Episode | None = None
        self.env = None  # the episode's env while it is open
        self.config = None  # the episode's EnvConfig (kept after close)

    async def reset(self, states: dict, **kwargs: Any) -> dict:
        settings, seed = env_settings(states.get("label"))
        env = await offload(make_env, settings, evaluator=self.evaluator, policy_summaries=self.policy_summaries)
        self.episode, self.env, self.config = Episode(env), env, env.config
        info = await offload(self.episode.reset, seed)
        observation = self.episode.observation
        prompt = states.get("observation")
        self.chat.learn(prompt, observation)
        if isinstance(prompt, str) and observation in prompt:
            shown = prompt  # the dataset prompt (maybe chat-wrapped) is this observation
        else:
            shown = self.chat.user_turn(observation)  # the label picked another task (e.g. "suite:level1")
        return {"observation": shown, "label": states.get("label"), "info": info}

    async def step(self, states: dict, **kwargs: Any) -> dict:
        if self.env is None:
            raise ConfigError("KernelRefineAgent.step() before reset()")
        observation, reward, _, _, info = await offload(self.episode.step, states["action_text"])
        done = self.episode.done
        if done:
            feedback = ""
            await offload(self.close)
        else:
            feedback = self.feedback(states.get("action_end"))
        return {"rewards": torch.tensor(float(reward)), "scores": torch.tensor(max(self.episode.scores)),
                "environment_feedback": feedback, "done": done, "extra_logs": turn_logs(info),
                "observation": observation, "info": info}

    def feedback(self, action_end: str | None = None) -> str:
        """The newest step's feedback as the user turn that follows the response (see `ChatFormat.followup`)."""
        return self.chat.followup(self.episode.followup(), action_end)

    def close(self) -> None:
        if self.env is not None:
            self.episode.close()
            self.env = None


# ---- the executor --------------------------------------------------------------------------------------------------
class KernelRefineExecutor(AgentExecutorBase):
    """Runs one episode per `execute` and returns it as one summed sample ("sum") or one sample per turn ("turns")."""

    agent_cls = KernelRefineAgent

    def __init__(self, mode: str | None = None, *, evaluator: Any = None):
        self.mode = executor_mode(mode)
        self.evaluator = evaluator

    async def execute(self, prompt, label, sampling_params, max_length: int, hf_tokenizer, llm_engine, images=None):
        if images:
            raise ConfigError("KernelRefine prompts are text only (got images)")
        if self.mode == "turns" and not os.environ.get(ENV_FLATTEN):
            raise ConfigError(f"{ENV_MODE}=turns returns one sample per turn, which stock OpenRLHF cannot consume: "
                              "launch with `python -m kernel_gym.integrations.openrlhf_train ...` (see "
                              f"docs/openrlhf.md), or set {ENV_MODE}=sum")
        summaries = os.environ.get(ENV_SUMMARIES, "").strip() not in ("", "0", "false")
        if summaries and self.mode != "turns":
            raise ConfigError(f"{ENV_SUMMARIES}=1 needs {ENV_MODE}=turns: in sum mode the prompt is the conversation "
                              "itself, which shows no summaries")
        agent = self.agent_cls(chat=ChatFormat(hf_tokenizer), evaluator=self.evaluator, policy_summaries=summaries)
        try:
            reset = await agent.reset({"observation": prompt, "label": label})
            policy = _Policy(agent, reset["observation"], self.mode == "turns", sampling_params, max_length,
                             hf_tokenizer, llm_engine)
            await play([agent.episode], policy, summaries=summaries)
            return policy.samples(prompt, label)
        finally:
            await offload(agent.close)


class _Policy(Policy):
    """The trainer's side of one execute(): answers from llm_engine, and the token bookkeeping of the samples."""

    def __init__(self, agent: KernelRefineAgent, shown: str, turns: bool, sampling_params, max_length: int,
                 tokenizer, engine):
        self.agent, self.shown, self.turns = agent, shown, turns
        self.sampling_params, self.max_length, self.tokenizer, self.engine = sampling_params, max_length, tokenizer, engine
        self.want_logprobs = getattr(sampling_params, "logprobs", None) is not None
        self.turn_samples: list[dict] = []  # "turns": one per turn
        self.tokens = self.fit_prompt(self.tokenize(shown))  # "sum": the conversation so far
        self.ranges: list[tuple[int, int]] = []
        self.logprobs = [0.0] * len(self.tokens) if self.want_logprobs else None
        self.truncated, self.end = False, None

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text=text, add_special_tokens=False, return_tensors="pt")["input_ids"][0].tolist())

    def fit_prompt(self, tokens: list[int]) -> list[int]:
        """Keep room for generation: cut the prompt's head (as OpenRLHF does) when it is too long."""
        room = self.max_length - (getattr(self.sampling_params, "max_tokens", None) or 1)
        if len(tokens) > room:
            logger.warning("kernel-gym: a prompt of %d tokens exceeds %d; its head is cut (raise --data.max_len or "
                           "lower the env's max_obs_chars)", len(tokens), room)
            tokens = tokens[-max(room, 1):]
        return tokens

    async def answer(self, episodes: list[Episode]) -> list[str]:
        (episode,) = episodes
        if self.turns and episode.infos:  # a later turn: a fresh conversation with the env's observation
            context = self.fit_prompt(self.tokenize(self.agent.chat.user_turn(episode.observation)))
        else:  # the first turn's prompt, or the conversation so far ("sum")
            context = self.tokens
        action, action_lp, self.truncated, text, self.end = await self.generate(context)
        span = (len(context), len(context) + len(action))
        if self.turns:
            logprobs = [0.0] * len(context) + (action_lp or [0.0] * len(action)) if self.want_logprobs else None
            self.turn_samples.append({"observation_tokens": context + action, "action_ranges": [span],
                                      "rollout_log_probs": logprobs, "truncated": self.truncated})
        else:
            self.ranges.append(span)
            self.tokens = context + action
            if self.logprobs is not None:
                self.logprobs += action_lp or [0.0] * len(action)
        return [text]

    async def follow(self, episode: Episode) -> bool:
        if self.turns:
            return True
        feedback = self.tokenize(self.agent.feedback(self.end))
        self.tokens = self.tokens + feedback
        if self.logprobs is not None:
            self.logprobs += [0.0] * len(feedback)
        return self.max_length - len(self.tokens) > 0

    async def generate(self, context: list[int]):
        """(token ids, logprobs or None, cut by the length limit, text, text of the turn-ending token or None)."""
        params = deepcopy(self.sampling_params)
        budget = self.max_length - len(context)
        params.max_tokens = min(params.max_tokens, budget) if getattr(params, "max_tokens", None) else budget
        output = (await self.engine.generate(context, params, multi_modal_data=None)).outputs[0]
        tokens = list(output.token_ids)
        logprobs = None
        if self.want_logprobs and output.logprobs is not None:
            logprobs = [lp[t].logprob if t in lp else 0.0 for t, lp in zip(tokens, output.logprobs)]
        ended = output.finish_reason != "length" and tokens and tokens[-1] in set(self.tokenizer.all_special_ids)
        end_text = self.tokenizer.decode(tokens[-1:], skip_special_tokens=False) if ended else None
        return tokens, logprobs, output.finish_reason == "length", output.text, end_text

    async def summary(self, messages: list[dict[str, str]]) -> str:
        """The policy's summary of a turn's reasoning (Kevin): one more request to llm_engine, not trained on."""
        params = deepcopy(self.sampling_params)
        params.max_tokens, params.temperature = SUMMARY_TOKENS, 0.0
        if hasattr(params, "logprobs"):
            params.logprobs = None
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return (await self.engine.generate(self.tokenize(text), params, multi_modal_data=None)).outputs[0].text

    def samples(self, prompt, label) -> dict | list[dict]:
        """The played episode as OpenRLHF samples: one summed sample ("sum") or one per turn with its return."""
        episode = self.agent.episode
        base = {"prompt": prompt, "label": label, "images": None, "mm_train_inputs": None}
        if not self.turns:
            return {**base, "reward": episode.reward(), "scores": max(episode.scores),
                    "observation_tokens": self.tokens, "action_ranges": self.ranges,
                    "rollout_log_probs": self.logprobs, "truncated": self.truncated,
                    "extra_logs": turn_logs(episode.infos[-1])}
        samples = []
        for sample, info, ret in zip(self.turn_samples, episode.infos, episode.returns()):
            samples.append({**base, **sample, "reward": ret, "scores": float(info["score"]),
                            "extra_logs": {**turn_logs(info), "kernel/return": ret}})
        return samples


AgentExecutor = KernelRefineExecutor
"""The name OpenRLHF's `--train.agent_func_path` loader looks for (instantiated with no arguments)."""
