"""verl adapter: one KernelRefine episode per sample, as a verl agent loop (verl 0.9.1 `AgentLoopBase`).

Registered in verl's agent-loop registry as "kernel_gym"; an `agent_loop_config_path` YAML entry (see
examples/verl/kernel_gym_agent.yaml) selects it and passes its settings, which hydra hands to `__init__`:

    - name: kernel_gym
      _target_: kernel_gym.integrations.verl.KernelRefineAgentLoop
      mode: turns            # "turns" (Kevin's recipe) or "trajectory" (verl's stock multi-turn)
      env: {max_turns: 4, gamma: 0.4, device: cuda}   # gym.make keywords, the defaults of every episode
      evaluator: null        # "local", "ray[:address]", "http(s)://host:port"; null: $KERNEL_GYM_EVALUATOR
      eval_workers: 1

A dataset row (`kernel_gym.integrations.verl_data`) names its episode in `extra_info["kernel_gym"]`: a JSON object
(or dict) with `task` and any `gym.make` keyword (they win over `env`), plus `seed`.

Modes (guide: docs/trainers.md, "verl"):
- "trajectory": verl's stock multi-turn sample. One `AgentLoopOutput`: the prompt, then every response and the
  feedback that follows it as a user turn (response_mask 1 on the model's tokens, 0 on the feedback), tokenized
  with verl's Continuous Token builder as `ToolAgentLoop` does. `reward_score` is the episode's reward, the sum of
  the env's step rewards (Σ s_t; R_1 with the env's `reward_mode="return"`); verl puts it on the last token.
  `extra_fields["turn_scores"]` holds the per-turn scores (verl's own key).
- "turns" (Kevin's recipe): `run` returns a list with one `AgentLoopOutput` per turn: its prompt is that turn's
  observation (task + summarized history, a fresh conversation), its response the model's answer, its
  `reward_score` the discounted return `R_t = kernel_gym.rewards.aggregate(scores, gamma, aggregation)[t]`.
  verl 0.9.1 takes a list from `run` on its V1 trainer (`trainer.use_v1=True`, the default): `AgentLoopWorkerTQ`
  stores each output as its own row (key `{uid}_{session}_{index}`). Two things of verl's shape the mode:
  the worker copies the last output's `reward_score` onto the earlier ones (one reward per trajectory), which
  `TurnOutput` refuses, so each row keeps its own return; and `algorithm.adv_estimator=grpo` computes the
  advantage of the last row only and broadcasts it, so this mode refuses "grpo" (use "grpo_vectorized": the
  same group-normalized advantage, row by row, the group being every turn of the n episodes of a prompt: the
  `advantage: group_all_turns` of kernel_gym.integrations.advantage, Kevin's recipe and every adapter's default;
  "per_turn_index" is refused, as verl groups rows by the prompt's uid only).

Evaluation never runs in verl's agent-loop workers: each env sends its jobs to the process's shared evaluator
(`kernel_gym.integrations.shared_evaluator`): `kernel-gym serve` on the GPU machines (an http URL), Ray actors, or
the machine's judge ("local", device cuda, where the worker sees a GPU). Env steps run off verl's event loop.
"""

from __future__ import annotations

import logging
import time
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    _agent_loop_registry,
    register,
)

from kernel_gym.errors import ConfigError
from kernel_gym.integrations.advantage import advantage_option, single_episode_warning
from kernel_gym.integrations.episodes import Episode, Policy, episode_settings, make_env, play
from kernel_gym.integrations.episodes import parse_label as parse_label  # the one label reader, under this name too
from kernel_gym.integrations.shared_evaluator import offload, shared_evaluator

logger = logging.getLogger(__name__)

AGENT_NAME = "kernel_gym"
MODES = ("trajectory", "turns")
LABEL_KEY = "kernel_gym"
_WARNED: set[str] = set()
"""The key of a dataset row's `extra_info` that holds the episode's label."""


class TurnOutput(AgentLoopOutput):
    """One turn of a "turns"-mode episode: an `AgentLoopOutput` whose `reward_score` is that turn's return R_t.

    verl 0.9.1's `AgentLoopWorkerTQ._agent_loop_postprocess` assigns the last output's `reward_score` to every earlier
    output of a trajectory; a TurnOutput keeps the return it was built with (a later assignment is ignored).
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "reward_score" and self.reward_score is not None:
            return
        super().__setattr__(name, value)


def turn_info(info: dict[str, Any]) -> dict[str, Any]:
    """The numbers of one step's info that a training log wants (verl keeps them per row in `extra_fields`)."""
    return {"turn": int(info["turn"]), "score": float(info["score"]), "format_ok": bool(info.get("format_ok")),
            "compiled": bool(info.get("compiled")), "correct": bool(info.get("correct")),
            "speedup": float(info.get("speedup") or 0.0), "hacks": list(info.get("hacks") or []),
            "error": info.get("error") or "", "summary_fallback": info.get("summary_source") == "fallback"}


def _plain(value: Any) -> Any:
    """A hydra/OmegaConf node (DictConfig) -> plain Python containers."""
    try:
        from omegaconf import OmegaConf

        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    except ImportError:  # omegaconf comes with verl; only for callers that pass plain values
        return value


class KernelRefineAgentLoop(AgentLoopBase):
    """A KernelRefine episode per sample: generate through verl's server, evaluate through kernel-gym's judge."""

    def __init__(self, *args: Any, mode: str = "trajectory", env: Any = None, evaluator: str | None = None,
                 eval_workers: int | None = None, policy_summaries: bool = False, summary_tokens: int = 256,
                 advantage: str | None = None, **kwargs: Any):
        kwargs.pop("name", None)  # the YAML entry's own name, passed along by hydra
        super().__init__(*args, **kwargs)
        if mode not in MODES:
            raise ConfigError(f"the kernel_gym agent loop's mode must be one of {MODES}, got {mode!r}")
        self.mode, self.advantage = mode, advantage_option(advantage)
        if self.advantage != "group_all_turns":
            raise ConfigError(f"advantage={self.advantage}: verl groups a row's advantage by its prompt's uid, every "
                              "turn of the prompt's rollout.n episodes (group_all_turns, Kevin's recipe); a group per "
                              "turn index needs TRL or OpenRLHF")
        if policy_summaries and mode != "turns":
            raise ConfigError("policy_summaries needs mode=turns: in mode=trajectory the prompt is the conversation "
                              "itself, which shows no summaries")
        self.policy_summaries, self.summary_tokens = bool(policy_summaries), int(summary_tokens)
        self.env_defaults: dict[str, Any] = dict(_plain(env) or {})
        self.evaluator_spec, self.eval_workers = evaluator, eval_workers
        self.response_length = self.rollout_config.response_length
        if mode == "turns":
            self._check_turns_config()

    def _check_turns_config(self) -> None:
        trainer, algorithm = self.config.get("trainer", {}), self.config.get("algorithm", {})
        n = int(self.config.get("actor_rollout_ref", {}).get("rollout", {}).get("n", 0) or 0)
        warning = single_episode_warning(n, self.advantage, f"verl actor_rollout_ref.rollout.n={n}") if n else None
        if warning and warning not in _WARNED:  # verl builds a loop per sample: said once a process
            _WARNED.add(warning)
            logger.warning(warning)
        if not trainer.get("use_v1", False):
            raise ConfigError("mode=turns returns one output per turn, which only verl's V1 trainer stores "
                              "(trainer.use_v1=True); use mode=trajectory on the legacy trainer")
        if str(algorithm.get("adv_estimator", "")) == "grpo":
            raise ConfigError("mode=turns with algorithm.adv_estimator=grpo: verl 0.9.1 computes GRPO on a "
                              "trajectory's last output and copies it to the others, so per-turn returns would be "
                              "lost; use algorithm.adv_estimator=grpo_vectorized (the same advantage, per row)")

    # ---- the episode -----------------------------------------------------------------------------------------------
    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput | list[AgentLoopOutput]:
        label = (kwargs.get("extra_info") or {}).get(LABEL_KEY)
        settings, seed = episode_settings(label, self.env_defaults, f"a verl row's extra_info[{LABEL_KEY!r}]")
        env = await offload(make_env, settings, shared=self._evaluator, policy_summaries=self.policy_summaries)
        episode = Episode(env)
        try:
            await offload(episode.reset, seed)
            system = [m for m in (kwargs.get("raw_prompt") or []) if m.get("role") == "system"]
            policy = (_Turns if self.mode == "turns" else _Trajectory)(self, system, sampling_params)
            await play([episode], policy, summaries=self.policy_summaries)
            return policy.output(episode)
        finally:
            await offload(episode.close)  # the shared evaluator stays open

    def _evaluator(self, device: str):
        return shared_evaluator(device, self.evaluator_spec, self.eval_workers)


# Registered under AGENT_NAME unless an entry is there already: verl's worker loads the agent-loop YAML (mode, env,
# evaluator, ...) into the registry and imports this module only at its first instantiation, so a registration at
# import replaced the YAML's entry with a bare target, and every later episode ran with the defaults (mode=trajectory,
# device auto, ...): found by examples/verl/smoke.py with rollout.n=2 (tests imported this module first).
if AGENT_NAME not in _agent_loop_registry:
    register(AGENT_NAME)(KernelRefineAgentLoop)


class _VerlPolicy(Policy):
    """The trainer's side of one episode: answers and summaries from verl's server, tokens by verl's builders."""

    def __init__(self, loop: KernelRefineAgentLoop, system: list[dict], sampling_params: dict[str, Any]):
        self.loop, self.system, self.sampling_params = loop, system, sampling_params

    async def generate(self, prompt_ids: list[int], sampling_params: dict[str, Any], timing: dict[str, float]):
        t0 = time.perf_counter()
        output = await self.loop.server_manager.generate(request_id=uuid4().hex, prompt_ids=prompt_ids,
                                                         sampling_params=sampling_params)
        timing["generate_sequences"] = timing.get("generate_sequences", 0.0) + time.perf_counter() - t0
        return output

    def text(self, token_ids: list[int]) -> str:
        return self.loop.tokenizer.decode(token_ids, skip_special_tokens=True)

    async def summary(self, messages: list[dict[str, str]]) -> str:
        """The policy's summary of a turn's reasoning: one more request to verl's server (not trained on)."""
        prompt = await self.loop.ct_build_initial_tokens(messages)
        out = await self.loop.server_manager.generate(
            request_id=uuid4().hex, prompt_ids=prompt,
            sampling_params={"max_tokens": self.loop.summary_tokens, "temperature": 0.0})
        return self.text(out.token_ids)


class _Trajectory(_VerlPolicy):
    """verl's stock multi-turn sample: the prompt, then every answer (trained on) and its feedback (masked out)."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.messages: list[dict[str, str]] = list(self.system)
        self.tokens: list[int] = []
        self.prompt_len, self.mask, self.logprobs = 0, [], None
        self.timing: dict[str, float] = {}
        self.extra: dict[str, Any] = {}
        self.feedbacks, self.last = 0, ""

    async def answer(self, episodes: list[Episode]) -> list[str]:
        (episode,) = episodes
        if not episode.infos:
            self.messages.append({"role": "user", "content": episode.observation})
            self.tokens = await self.loop.ct_build_initial_tokens(self.messages)
            self.prompt_len = len(self.tokens)
        # the whole episode's answers share response_length: each answer gets what the earlier ones left
        params = {**self.sampling_params, "max_tokens": self.loop.response_length - len(self.mask)}
        out = await self.generate(self.tokens, params, self.timing)
        self.extra.update(_newest_steps(out.extra_fields) if episode.infos else out.extra_fields)
        if out.log_probs and self.logprobs is None:
            self.logprobs = [0.0] * len(self.mask)
        merge, self.mask, self.logprobs = await self.loop.ct_merge_assistant_token(
            self.tokens, out.token_ids, self.mask, self.logprobs, assistant_logprobs=out.log_probs or None)
        self.tokens, self.last = merge.token_ids, self.text(out.token_ids)
        return [self.last]

    async def follow(self, episode: Episode) -> bool:
        self.messages.append({"role": "assistant", "content": self.last})
        previous = list(self.messages)
        self.messages.append({"role": "user", "content": episode.followup()})
        merge, mask, logprobs = await self.loop.ct_merge_context_msg(previous, self.messages, self.tokens, self.mask,
                                                                     self.logprobs)
        if len(mask) >= self.loop.response_length:
            return False  # no room left for another answer: the episode ends here, cut
        self.tokens, self.mask, self.logprobs = merge.token_ids, mask, logprobs
        self.feedbacks += 1
        return True

    def output(self, episode: Episode) -> AgentLoopOutput:
        scores, infos, reward = episode.scores, [turn_info(i) for i in episode.infos], episode.reward()
        self.timing["tool_calls"] = sum(episode.env_s)  # verl's name for the time spent in the env
        self.extra.update({"turn_scores": scores,
                           "kernel_gym": {"turns": infos, "complete": episode.done, "returns": episode.returns()},
                           "reward_extra_info": _episode_metrics(scores, infos, reward)})
        n, p = self.loop.response_length, self.prompt_len
        return AgentLoopOutput(
            prompt_ids=self.tokens[:p], response_ids=self.tokens[p:][:n], response_mask=self.mask[:n],
            response_logprobs=self.logprobs[:n] if self.logprobs else None, reward_score=float(reward),
            num_turns=1 + len(scores) + self.feedbacks, metrics=AgentLoopMetrics(**self.timing),
            extra_fields=self.extra)


class _Turns(_VerlPolicy):
    """Kevin's recipe: every turn its own row, prompted with that turn's observation (a fresh conversation)."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.turns: list[tuple] = []  # (prompt, response, mask, logprobs, timing, extra fields) per turn

    async def answer(self, episodes: list[Episode]) -> list[str]:
        (episode,) = episodes
        timing: dict[str, float] = {}
        prompt = await self.loop.ct_build_initial_tokens([*self.system, {"role": "user", "content": episode.observation}])
        out = await self.generate(prompt, self.sampling_params, timing)
        merge, mask, logprobs = await self.loop.ct_merge_assistant_token(
            prompt, out.token_ids, [], [] if out.log_probs else None, assistant_logprobs=out.log_probs or None)
        split = len(merge.token_ids) - len(mask)
        self.turns.append((merge.token_ids[:split], merge.token_ids[split:], mask, logprobs, timing,
                           dict(out.extra_fields)))
        return [self.text(out.token_ids)]

    def output(self, episode: Episode) -> list[AgentLoopOutput]:
        n, returns, infos, outputs = self.loop.response_length, episode.returns(), [], []
        for (prompt, response, mask, logprobs, timing, extra), info, env_s, ret in zip(
                self.turns, episode.infos, episode.env_s, returns):
            infos.append(turn_info(info))
            timing["tool_calls"] = env_s
            extra.update({"turn_scores": [infos[-1]["score"]], "kernel_gym": {**infos[-1], "return": ret}})
            outputs.append(TurnOutput(
                prompt_ids=prompt, response_ids=response[:n], response_mask=mask[:n],
                response_logprobs=logprobs[:n] if logprobs else None, reward_score=ret, num_turns=2,
                metrics=AgentLoopMetrics(**timing), extra_fields=extra))
        # the worker copies the last output's reward_extra_info onto every output: the episode's, not the turn's
        outputs[-1].extra_fields["reward_extra_info"] = _episode_metrics(episode.scores, infos, returns[0])
        return outputs


def _newest_steps(fields: dict[str, Any]) -> dict[str, Any]:
    """Of a later generation's extra fields, the newest weights version (verl's off-policy staleness tag)."""
    return {"max_global_steps": fields["max_global_steps"]} if fields.get("max_global_steps") is not None else {}


def _episode_metrics(scores: list[float], infos: list[dict[str, Any]], reward: float) -> dict[str, float]:
    """Numbers verl logs per trajectory (`reward_extra_info`): the same keys for every row."""
    return {"kernel/reward": float(reward), "kernel/turns": float(len(scores)),
            "kernel/best_score": max(scores, default=0.0),
            "kernel/correct": float(any(i["correct"] for i in infos)),
            "kernel/best_speedup": max((i["speedup"] for i in infos if i["correct"]), default=0.0),
            "kernel/hacks": float(sum(len(i["hacks"]) for i in infos)),
            "kernel/infra_failures": float(sum(bool(i.get("infra_failure")) for i in infos))}
