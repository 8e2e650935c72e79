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
  same group-normalized advantage, row by row, the group being every turn of the n episodes of a prompt).

Evaluation never runs in verl's agent-loop workers: each env sends its jobs to the process's shared evaluator
(`kernel_gym.integrations.shared_evaluator`): `kernel-gym serve` on the GPU machines (an http URL), Ray actors, or
the machine's judge ("local", device cuda, where the worker sees a GPU). Env steps run off verl's event loop.
"""

from __future__ import annotations

import logging
import time
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from kernel_gym.errors import ConfigError
from kernel_gym.integrations import episodes
from kernel_gym.integrations.shared_evaluator import offload, shared_evaluator
from kernel_gym.rewards import aggregate

logger = logging.getLogger(__name__)

AGENT_NAME = "kernel_gym"
MODES = ("trajectory", "turns")
LABEL_KEY = "kernel_gym"
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


def parse_label(label: Any) -> dict[str, Any]:
    """`extra_info["kernel_gym"]` -> gym.make keywords (+ `seed`): a JSON object string or a dict with "task"."""
    return episodes.parse_label(label, f"a verl row's extra_info[{LABEL_KEY!r}]")


def turn_info(info: dict[str, Any]) -> dict[str, Any]:
    """The numbers of one step's info that a training log wants (verl keeps them per row in `extra_fields`)."""
    return {"turn": int(info["turn"]), "score": float(info["score"]), "format_ok": bool(info.get("format_ok")),
            "compiled": bool(info.get("compiled")), "correct": bool(info.get("correct")),
            "speedup": float(info.get("speedup") or 0.0), "hacks": list(info.get("hacks") or []),
            "error": info.get("error") or ""}


def _plain(value: Any) -> Any:
    """A hydra/OmegaConf node (DictConfig) -> plain Python containers."""
    try:
        from omegaconf import OmegaConf

        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    except ImportError:  # omegaconf comes with verl; only for callers that pass plain values
        return value


@register(AGENT_NAME)
class KernelRefineAgentLoop(AgentLoopBase):
    """A KernelRefine episode per sample: generate through verl's server, evaluate through kernel-gym's judge."""

    def __init__(self, *args: Any, mode: str = "trajectory", env: Any = None, evaluator: str | None = None,
                 eval_workers: int | None = None, policy_summaries: bool = False, summary_tokens: int = 256,
                 **kwargs: Any):
        kwargs.pop("name", None)  # the YAML entry's own name, passed along by hydra
        super().__init__(*args, **kwargs)
        if mode not in MODES:
            raise ConfigError(f"the kernel_gym agent loop's mode must be one of {MODES}, got {mode!r}")
        if policy_summaries and mode != "turns":
            raise ConfigError("policy_summaries needs mode=turns: in mode=trajectory the prompt is the conversation "
                              "itself, which shows no summaries")
        self.mode = mode
        self.policy_summaries, self.summary_tokens = bool(policy_summaries), int(summary_tokens)
        self.env_defaults: dict[str, Any] = dict(_plain(env) or {})
        self.evaluator_spec, self.eval_workers = evaluator, eval_workers
        self.response_length = self.rollout_config.response_length
        if mode == "turns":
            self._check_turns_config()

    def _check_turns_config(self) -> None:
        trainer, algorithm = self.config.get("trainer", {}), self.config.get("algorithm", {})
        if not trainer.get("use_v1", False):
            raise ConfigError("mode=turns returns one output per turn, which only verl's V1 trainer stores "
                              "(trainer.use_v1=True); use mode=trajectory on the legacy trainer")
        if str(algorithm.get("adv_estimator", "")) == "grpo":
            raise ConfigError("mode=turns with algorithm.adv_estimator=grpo: verl 0.9.1 computes GRPO on a "
                              "trajectory's last output and copies it to the others, so per-turn returns would be "
                              "lost; use algorithm.adv_estimator=grpo_vectorized (the same advantage, per row)")

    # ---- the episode -----------------------------------------------------------------------------------------------
    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput | list[AgentLoopOutput]:
        env, seed = await offload(self._make_env, (kwargs.get("extra_info") or {}).get(LABEL_KEY))
        try:
            observation, _ = await offload(env.reset, seed=seed)
            system = [m for m in (kwargs.get("raw_prompt") or []) if m.get("role") == "system"]
            if self.mode == "turns":
                return await self._run_turns(env, system, observation, sampling_params)
            return await self._run_trajectory(env, system, observation, sampling_params)
        finally:
            await offload(env.close)  # the shared evaluator stays open

    def _make_env(self, label: Any):
        from kernel_gym.env import KernelRefineEnv

        env_kwargs = {**self.env_defaults, **parse_label(label)}
        seed = env_kwargs.pop("seed", None)
        device = env_kwargs.setdefault("device", "auto")
        if device == "auto":
            from kernel_gym.device import local_device

            env_kwargs["device"] = device = local_device("auto")
            if device == "cpu":
                logger.warning("kernel-gym: device 'auto' found no GPU in this verl worker (agent-loop workers hold "
                               "none): candidates run on the CPU backend; set env.device: cuda in the agent YAML")
        evaluator = shared_evaluator(device, self.evaluator_spec, self.eval_workers)
        if self.policy_summaries:  # Kevin: the policy summarizes its turns, through verl's server (see _summary)
            env_kwargs["summarizer"] = episodes.policy_summarizer(int(env_kwargs.get("summary_chars", 400)))
        return KernelRefineEnv(evaluator=evaluator, **env_kwargs), None if seed is None else int(seed)

    async def _summary(self, messages: list[dict[str, str]]) -> str:
        """The policy's summary of a turn's reasoning: one more request to verl's server (not trained on)."""
        prompt = await self.ct_build_initial_tokens(messages)
        out = await self.server_manager.generate(request_id=uuid4().hex, prompt_ids=prompt,
                                                 sampling_params={"max_tokens": self.summary_tokens, "temperature": 0.0})
        return self.tokenizer.decode(out.token_ids, skip_special_tokens=True)

    async def _generate(self, prompt_ids: list[int], sampling_params: dict[str, Any], timing: dict[str, float]):
        t0 = time.perf_counter()
        output = await self.server_manager.generate(request_id=uuid4().hex, prompt_ids=prompt_ids,
                                                    sampling_params=sampling_params)
        timing["generate_sequences"] = timing.get("generate_sequences", 0.0) + time.perf_counter() - t0
        return output

    async def _step(self, env, token_ids: list[int], timing: dict[str, float]):
        text = self.tokenizer.decode(token_ids, skip_special_tokens=True)
        t0 = time.perf_counter()
        if self.policy_summaries:
            await episodes.prefill_summary(env, text, self._summary)
        result = await offload(env.step, text)
        timing["tool_calls"] = timing.get("tool_calls", 0.0) + time.perf_counter() - t0  # verl's name for env time
        return text, result

    async def _run_trajectory(self, env, system: list[dict], observation: str, sampling_params: dict[str, Any]):
        messages = [*system, {"role": "user", "content": observation}]
        tokens = await self.ct_build_initial_tokens(messages)
        prompt_len = len(tokens)
        mask: list[int] = []
        logprobs: list[float] | None = None
        timing: dict[str, float] = {}
        extra: dict[str, Any] = {}
        scores, rewards, infos, done, feedbacks = [], [], [], False, 0
        while not done and len(mask) < self.response_length:
            # the whole episode's answers share response_length: each answer gets what the earlier ones left
            params = {**sampling_params, "max_tokens": self.response_length - len(mask)}
            out = await self._generate(tokens, params, timing)
            extra.update(_newest_steps(out.extra_fields) if scores else out.extra_fields)
            if out.log_probs and logprobs is None:
                logprobs = [0.0] * len(mask)
            merge, mask, logprobs = await self.ct_merge_assistant_token(
                tokens, out.token_ids, mask, logprobs, assistant_logprobs=out.log_probs or None)
            tokens = merge.token_ids
            text, (observation, reward, terminated, truncated, info) = await self._step(env, out.token_ids, timing)
            done = bool(terminated or truncated)
            scores.append(float(info["score"]))
            rewards.append(float(reward))
            infos.append(turn_info(info))
            if done:
                break
            messages.append({"role": "assistant", "content": text})
            previous = list(messages)
            messages.append({"role": "user", "content": episodes.followup(info, env.config.max_turns)})
            merge, new_mask, new_logprobs = await self.ct_merge_context_msg(previous, messages, tokens, mask, logprobs)
            if len(new_mask) >= self.response_length:
                break  # no room left for another answer: the episode ends here, cut
            tokens, mask, logprobs = merge.token_ids, new_mask, new_logprobs
            feedbacks += 1
        reward = sum(rewards)
        if not done and env.config.reward_mode == "return":
            reward = aggregate(scores, env.config.gamma, env.config.aggregation)[0]  # the env's R_1 never came
        n = self.response_length
        extra.update({"turn_scores": scores, "kernel_gym": {"turns": infos, "complete": done,
                                                            "returns": aggregate(scores, env.config.gamma,
                                                                                 env.config.aggregation)},
                      "reward_extra_info": _episode_metrics(scores, infos, reward)})
        return AgentLoopOutput(
            prompt_ids=tokens[:prompt_len], response_ids=tokens[prompt_len:][:n], response_mask=mask[:n],
            response_logprobs=logprobs[:n] if logprobs else None, reward_score=float(reward),
            num_turns=1 + len(scores) + feedbacks, metrics=AgentLoopMetrics(**timing),
            extra_fields=extra)

    async def _run_turns(self, env, system: list[dict], observation: str, sampling_params: dict[str, Any]):
        turns, scores, done, returns = [], [], False, None
        while not done:
            timing: dict[str, float] = {}
            prompt = await self.ct_build_initial_tokens([*system, {"role": "user", "content": observation}])
            out = await self._generate(prompt, sampling_params, timing)
            merge, mask, logprobs = await self.ct_merge_assistant_token(
                prompt, out.token_ids, [], [] if out.log_probs else None, assistant_logprobs=out.log_probs or None)
            _, (observation, _, terminated, truncated, info) = await self._step(env, out.token_ids, timing)
            done = bool(terminated or truncated)
            scores.append(float(info["score"]))
            response = merge.token_ids[len(merge.token_ids) - len(mask):]
            turns.append((merge.token_ids[:len(merge.token_ids) - len(mask)], response, mask, logprobs, timing,
                          dict(out.extra_fields), turn_info(info)))
            if done:
                returns = info.get("returns")
        if returns is None or len(returns) != len(scores):
            returns = aggregate(scores, env.config.gamma, env.config.aggregation)
        n, outputs = self.response_length, []
        for (prompt, response, mask, logprobs, timing, extra, info), ret in zip(turns, returns):
            extra.update({"turn_scores": [info["score"]], "kernel_gym": {**info, "return": float(ret)}})
            outputs.append(TurnOutput(
                prompt_ids=prompt, response_ids=response[:n], response_mask=mask[:n],
                response_logprobs=logprobs[:n] if logprobs else None, reward_score=float(ret), num_turns=2,
                metrics=AgentLoopMetrics(**timing), extra_fields=extra))
        # the worker copies the last output's reward_extra_info onto every output: the episode's, not the turn's
        outputs[-1].extra_fields["reward_extra_info"] = _episode_metrics(scores, [t[-1] for t in turns], returns[0])
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
