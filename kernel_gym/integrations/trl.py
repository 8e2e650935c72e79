"""TRL adapter: KernelRefine episodes as GRPOTrainer rollouts, through TRL's `rollout_func` hook.

    from trl import GRPOConfig, GRPOTrainer
    from kernel_gym.integrations.trl import KernelRefineRollout, kernel_dataset, kernel_reward

    rollout = KernelRefineRollout(max_turns=4, mode="turns", env_kwargs={"device": "cuda"})
    trainer = GRPOTrainer(model=..., args=GRPOConfig(num_generations=8, ...), train_dataset=kernel_dataset("level1"),
                          reward_funcs=kernel_reward, rollout_func=rollout)

The dataset's `prompt` column names the episode, as OpenRLHF's labels do: a task id or a JSON object with "task" and
any `gym.make` keyword (`kernel_dataset` writes them); the model never sees it: the rollout renders the env's own
prompt with the tokenizer's chat template. Two modes:

- "turns" (Kevin's recipe, per-turn rewards): every completion slot is one turn. `max_turns` consecutive slots (the
  same prompt, as GRPO's sampler repeats it) make one episode, and slot t is trained on turn t's observation (the
  task, the summarized earlier turns, the newest feedback) as its prompt, its response as the completion and the
  discounted return `R_t = kernel_gym.rewards.aggregate(scores, gamma, aggregation)[t]` as its reward. GRPO's group
  of `num_generations` slots is then `num_generations / max_turns` episodes of one task, so the advantage is
  normalized over all their turns (`advantage="group_all_turns"`, Kevin's recipe and the default of every adapter:
  kernel_gym.integrations.advantage). With `advantage="per_turn_index"` the rollout hands each slot its return
  normalized among the same turn of the group's episodes, and GRPO must not scale it again (`scale_rewards="none"`;
  whole groups on each process). Needs `num_generations % max_turns == 0` and a per-device batch that is a
  multiple of `max_turns`.
- "episode" (TRL's stock multi-turn): every slot is one whole episode: the first observation as the prompt, the
  completion every response followed by its feedback as a user turn (feedback tokens masked out of the loss through
  `env_mask`), the reward `R_1` (the episode's discounted return; gamma=1 makes it the sum of the turn scores).
  An episode also ends early when its completion reaches `max_completion_length`.

Generation goes through the trainer's own path (`GRPOTrainer._generate_single_turn`: vLLM, server or colocated, or
transformers' `generate`), one batched call per turn for all the process's episodes, so vLLM server mode's
collective calls match across ranks. Evaluation goes to the process's shared evaluator (a local sandbox pool,
Ray, or `kernel-gym serve`: `KERNEL_GYM_EVALUATOR`, see `shared_evaluator`), one thread per episode waiting on it.
With `policy_summaries=True` the policy writes the summaries of its earlier turns (Kevin): one more batched call
per turn, cached in a `ModelSummarizer` (extractive when the call fails, noted in `info["summary_source"]`).

Extra columns the reward functions receive (one value per completion): `kernel_reward` (R_t or R_1; with
per_turn_index its normalized value), `kernel_return` (R_t or R_1),
`kernel_score` (the turn's score; the best one in "episode" mode), `kernel_turn`, `kernel_task`, `kernel_correct`,
`kernel_error`, `kernel_infra_failure` (the evaluation infrastructure failed on the turn: its 0 is no verdict).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.feedback.summarize import ModelSummarizer
from kernel_gym.integrations.advantage import advantage_option, normalize, single_episode_warning
from kernel_gym.integrations.episodes import Episode, Policy, episode_settings, make_env, play
from kernel_gym.integrations.episodes import parse_label as parse_label  # the one label reader, under this name too

logger = logging.getLogger(__name__)

MODES = ("turns", "episode")

Generate = Callable[[list[list[int]], Any], tuple[list[list[int]], list[list[float]] | None]]
"""(prompt token ids, trainer) -> (completion token ids, per-token logprobs or None), one completion per prompt."""


# ---- dataset and reward ---------------------------------------------------------------------------------------------
def kernel_dataset(suite: str | None = None, *, tasks: Sequence[str] | None = None, split: str | None = "train",
                   repeat: int = 1, **env_kwargs: Any):
    """A `datasets.Dataset` with one `prompt` per task (a JSON label: the task and `env_kwargs`), `repeat` times.

    `suite` ("level1", "level2", ...) lists tasks with `kernel_gym.tasks.list_tasks(suite, split=split)`
    (the eval split's tasks stay out of training unless `split=None`); or pass `tasks` explicitly.
    """
    from datasets import Dataset

    from kernel_gym.tasks import list_tasks

    if tasks is None:
        tasks = list_tasks(suite, split)
    if not tasks:
        raise ConfigError(f"no tasks for suite={suite!r}, split={split!r}")
    labels = [json.dumps({"task": task, **env_kwargs}) for task in tasks] * max(1, repeat)
    return Dataset.from_dict({"prompt": labels})


def kernel_reward(completions: list[Any], kernel_reward: list[float] | None = None, log_metric: Any = None,
                  kernel_correct: list[bool] | None = None, **kwargs: Any) -> list[float]:
    """GRPOTrainer reward function: the rollout's `kernel_reward` column (R_t per turn, or R_1 per episode)."""
    if kernel_reward is None or len(kernel_reward) != len(completions):
        raise ConfigError("kernel_reward needs KernelRefineRollout as the trainer's rollout_func")
    if log_metric is not None and kernel_correct:
        log_metric("kernel/correct", sum(map(bool, kernel_correct)) / len(kernel_correct))
    if log_metric is not None and kwargs.get("kernel_infra_failure"):
        failed = kwargs["kernel_infra_failure"]
        log_metric("kernel/infra_failure", sum(map(bool, failed)) / len(failed))
    return [float(r) for r in kernel_reward]


# ---- chat formatting ------------------------------------------------------------------------------------------------
class ChatTokens:
    """Token ids of a user turn (a fresh conversation) and of a follow-up user turn, through the chat template."""

    def __init__(self, tokenizer: Any, chat_template_kwargs: dict[str, Any] | None = None):
        self.tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a processor's tokenizer
        self.kwargs = dict(chat_template_kwargs or {})
        self.chat = getattr(self.tokenizer, "chat_template", None) is not None

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def user_turn(self, text: str) -> list[int]:
        """A conversation whose one user message is `text`, ready for the assistant's answer."""
        if not self.chat:
            return self.encode(text)
        return self.encode(self._render([{"role": "user", "content": text}], add_generation_prompt=True))

    def followup(self, text: str, response_ids: Sequence[int]) -> list[int]:
        """Tokens after a response: the end of the assistant turn, `text` as a user turn, the generation prompt."""
        if not self.chat:
            return self.encode(f"\n\n{text}\n\n")
        base = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
        prefix = self._render(base)
        full = self._render([*base, {"role": "user", "content": text}], add_generation_prompt=True)
        if not full.startswith(prefix):
            raise ConfigError("the chat template does not render a conversation as a prefix of its continuation")
        eos = self.tokenizer.eos_token or ""
        cut = prefix.rfind(eos) + len(eos) if eos and eos in prefix else len(prefix)
        ids = self.encode(full[cut:])  # what follows the assistant's end-of-turn token
        eos_id = self.tokenizer.eos_token_id
        if eos and eos in prefix and eos_id is not None and (not response_ids or response_ids[-1] != eos_id):
            ids = [eos_id, *ids]  # the response was cut by the length limit: close its turn
        return ids

    def _render(self, messages: list[dict[str, str]], add_generation_prompt: bool = False) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt,
                                                  **self.kwargs)


def trainer_generate(prompt_ids: list[list[int]], trainer: Any) -> tuple[list[list[int]], list[list[float]] | None]:
    """One completion per prompt through GRPOTrainer's own generation path (vLLM or transformers)."""
    return trainer._generate_single_turn(prompt_ids, None, {}, 1)


# ---- the rollout ----------------------------------------------------------------------------------------------------
class _Episode(Episode):
    """An episode and the completion slots it fills: one per turn ("turns"), or its first alone ("episode")."""

    def __init__(self, env: Any, slots: list[int]):
        super().__init__(env)
        self.slots = slots
        self.prompt_ids: list[int] = []
        self.samples: list[dict[str, Any]] = []  # "turns": one per turn
        self.completion: list[int] = []  # "episode": responses and feedback
        self.env_mask: list[int] = []
        self.logprobs: list[float] | None = []
        self.last_ids: list[int] = []  # the newest response


class KernelRefineRollout:
    """GRPOTrainer's `rollout_func`: runs KernelRefine episodes for a batch of prompts (see the module docstring).

    | argument | default | meaning |
    |---|---|---|
    | max_turns | 4 | turns per episode (a label's own `max_turns` must agree in "turns" mode) |
    | mode | "turns" | "turns" (one sample per turn, reward R_t) or "episode" (one sample per episode, R_1) |
    | env_kwargs | {} | `gym.make` keywords for every episode (a label's keys win) |
    | evaluator | None | shared by every env; None: `shared_evaluator(device)` (KERNEL_GYM_EVALUATOR) |
    | generate | None | (prompt ids, trainer) -> (completion ids, logprobs); None: the trainer's own generation |
    | policy_summaries | False | the policy summarizes its earlier turns (Kevin), batched once per turn ("turns") |
    | advantage | None | "group_all_turns" (Kevin; None: $KERNEL_GYM_ADVANTAGE or that) or "per_turn_index" ("turns") |
    """

    def __init__(self, *, max_turns: int = 4, mode: str = "turns", env_kwargs: dict[str, Any] | None = None,
                 evaluator: Any = None, generate: Generate | None = None, policy_summaries: bool = False,
                 advantage: str | None = None):
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {MODES}, got {mode!r}")
        self.advantage = advantage_option(advantage)
        if self.advantage == "per_turn_index" and mode != "turns":
            raise ConfigError("advantage='per_turn_index' groups turn samples: it needs mode='turns' (in mode="
                              "'episode' a sample is a whole episode, and GRPO's group its task's episodes)")
        if max_turns < 1:
            raise ConfigError(f"max_turns must be at least 1, got {max_turns}")
        if policy_summaries and mode != "turns":
            raise ConfigError("policy_summaries needs mode='turns': in mode='episode' the prompt is the conversation "
                              "itself, which shows no summaries")
        self.max_turns, self.mode, self.evaluator = max_turns, mode, evaluator
        self._warned_single = False  # said once: a GRPO group that is a single episode (num_generations == max_turns)
        self.env_kwargs = dict(env_kwargs or {})
        self.generate = generate or trainer_generate
        self.policy_summaries = policy_summaries
        self.summarizer: _PolicySummarizer | None = None  # with policy_summaries: its cache lasts across batches
        self.__name__ = type(self).__name__

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        chat = ChatTokens(trainer.processing_class, getattr(trainer, "chat_template_kwargs", None))
        summarizer = None
        if self.policy_summaries:
            if self.summarizer is None or self.summarizer.trainer is not trainer:
                self.summarizer = _PolicySummarizer(chat, self.generate, trainer,
                                                    max_chars=int(self.env_kwargs.get("summary_chars", 400)))
            summarizer = self.summarizer
        episodes: list[_Episode] = []
        group = self._group_episodes(trainer, len(prompts))
        try:
            self._start(prompts, trainer, summarizer, episodes)
            policy = _Policy(self.mode == "turns", chat, self.generate, trainer)
            with ThreadPoolExecutor(max_workers=max(1, len(episodes)), thread_name_prefix="kernel-gym-trl") as pool:
                _run(play(episodes, policy, rounds=self.max_turns, summaries=summarizer is not None, threads=pool))
        finally:
            for episode in episodes:
                episode.close()
        return self._output(episodes, len(prompts), group)

    def _group_episodes(self, trainer: Any, n: int) -> int:
        """Episodes per GRPO group in "turns" mode (0 in "episode" mode); with per_turn_index, the trainer settings
        under which GRPO keeps the advantages handed to it (else ConfigError)."""
        generations = int(getattr(trainer, "num_generations", 0) or 0)
        if self.mode != "turns" or self.advantage != "per_turn_index":
            return generations // self.max_turns if self.mode == "turns" else 0
        scale = getattr(getattr(trainer, "args", None), "scale_rewards", "none")
        aggregation = getattr(trainer, "multi_objective_aggregation", "sum_then_normalize")
        if str(scale).lower() not in ("none", "false") or aggregation != "sum_then_normalize":
            raise ConfigError("advantage='per_turn_index' hands GRPO rewards already normalized per turn index: set "
                              f"GRPOConfig(scale_rewards='none') (got {scale!r}; GRPO then subtracts the group's mean, "
                              f"which is 0) and multi_objective_aggregation='sum_then_normalize' (got {aggregation!r})")
        if not generations or n % generations:
            raise ConfigError(f"advantage='per_turn_index' normalizes each GRPO group on its process: the per-device "
                              f"batch ({n}) must be a multiple of num_generations ({generations})")
        return generations // self.max_turns
    # ---- pieces -----------------------------------------------------------------------------------------------------
    def _start(self, prompts: list[Any], trainer: Any, summarizer: ModelSummarizer | None,
               episodes: list[_Episode]) -> None:
        """Open one reset episode per group of prompts into `episodes` (a group is `max_turns` slots in "turns")."""
        size = self.max_turns if self.mode == "turns" else 1
        if self.mode == "turns":
            groups = [getattr(trainer, "num_generations", None), getattr(trainer, "num_generations_eval", None)]
            if len(prompts) % size or any(g and g % size for g in groups):
                raise ConfigError(f"mode='turns' makes one completion per turn: num_generations ({groups[0]}), "
                                  f"num_generations_eval ({groups[1]}) and the per-device batch ({len(prompts)}) must "
                                  f"be multiples of max_turns ({size})")
            warning = single_episode_warning((groups[0] or 0) // size, self.advantage,
                                             f"TRL num_generations ({groups[0]}) == max_turns ({size})")
            if warning and groups[0] and not self._warned_single:  # said once: num_generations = k * max_turns, k >= 2
                self._warned_single = True
                logger.warning(warning)
        for start in range(0, len(prompts), size):
            chunk = prompts[start:start + size]
            if any(p != chunk[0] for p in chunk):
                raise ConfigError("mode='turns': the max_turns consecutive prompts of one episode differ (GRPO's "
                                  "sampler repeats each prompt num_generations times; keep that a multiple of "
                                  "max_turns)")
            settings, seed = episode_settings(chunk[0], {"max_turns": self.max_turns, **self.env_kwargs},
                                              "a KernelRefine prompt")
            if self.mode == "turns" and int(settings["max_turns"]) != self.max_turns:
                raise ConfigError(f"a label's max_turns ({settings['max_turns']}) differs from the rollout's "
                                  f"({self.max_turns}): in mode='turns' every episode fills max_turns slots")
            settings["max_turns"] = int(settings["max_turns"])
            if summarizer is not None:
                settings["summarizer"] = summarizer
            episodes.append(_Episode(make_env(settings, evaluator=self.evaluator), list(range(start, start + size))))
            episodes[-1].reset(seed)

    def _output(self, episodes: list[_Episode], n: int, group: int) -> dict[str, Any]:
        out: dict[str, list[Any]] = {k: [None] * n for k in (
            "prompt_ids", "completion_ids", "logprobs", "kernel_reward", "kernel_return", "kernel_score",
            "kernel_turn", "kernel_task", "kernel_correct", "kernel_error", "kernel_infra_failure",
            "kernel_summary_fallback")}
        if self.mode == "episode":
            out["env_mask"] = [None] * n
        for e in episodes:
            scores, returns = e.scores, e.returns()
            if self.mode == "turns":
                for slot, sample, info, ret in zip(e.slots, e.samples, e.infos, returns):
                    _put(out, slot, sample, ret, info["score"], info)
            else:
                best = max(range(len(scores)), key=scores.__getitem__)
                sample = {"prompt_ids": e.prompt_ids, "completion_ids": e.completion, "logprobs": e.logprobs}
                _put(out, e.slots[0], sample, returns[0], scores[best], e.infos[best])
                out["kernel_turn"][e.slots[0]] = len(scores)
                out["env_mask"][e.slots[0]] = e.env_mask
        if any(lp is None for lp in out["logprobs"]):
            out["logprobs"] = None
        if self.mode == "turns" and self.advantage != "group_all_turns":
            rewards = iter(slot_rewards([e.returns() for e in episodes], group, self.advantage))
            for slot in [slot for e in episodes for slot in e.slots]:
                out["kernel_reward"][slot] = next(rewards)
        return out


def slot_rewards(returns: list[list[float]], group: int, advantage: str) -> list[float]:
    """The `kernel_reward` column of "turns" mode, slot by slot (an episode's max_turns slots in a row, a GRPO
    group's `group` episodes in a row): R_t with group_all_turns (GRPO normalizes its group, every turn of its
    episodes, itself); with per_turn_index R_t normalized among the same turn of the group's episodes
    (kernel_gym.integrations.advantage.normalize; GRPO with scale_rewards="none" then subtracts the group's mean, 0)."""
    if advantage == "group_all_turns":
        return [r for episode in returns for r in episode]
    rows = [row for start in range(0, len(returns), group) for row in normalize(returns[start:start + group], advantage)]
    return [a for row in rows for a in row]


class _Policy(Policy):
    """The trainer's side of a batch: one generation call per turn for every episode still going (and one for the
    turn's summaries), through the trainer's own path."""

    def __init__(self, turns: bool, chat: ChatTokens, generate: Generate, trainer: Any):
        self.turns, self.chat, self.generate_ids, self.trainer = turns, chat, generate, trainer
        self.lockstep = _collective(trainer)
        self.limit = getattr(trainer, "max_completion_length", None)

    async def answer(self, episodes: list[_Episode]) -> list[str]:
        contexts = []
        for e in episodes:
            if self.turns or not e.prompt_ids:
                context = self.chat.user_turn(e.observation)
                if not e.prompt_ids:
                    e.prompt_ids = context
                contexts.append(context)
            else:
                contexts.append(e.prompt_ids + e.completion)
        completions, logprobs = self.generate(contexts)
        for i, e in enumerate(episodes):
            ids = e.last_ids = list(completions[i])
            lps = list(logprobs[i]) if logprobs is not None else None
            if self.turns:
                e.samples.append({"prompt_ids": contexts[i], "completion_ids": ids, "logprobs": lps})
            else:
                e.completion += ids
                e.env_mask += [1] * len(ids)
                e.logprobs = None if lps is None or e.logprobs is None else e.logprobs + lps
        return [self.chat.decode(ids) for ids in completions]

    async def follow(self, episode: _Episode) -> bool:
        if self.turns:
            return True
        feedback = self.chat.followup(episode.followup(), episode.last_ids)
        episode.completion += feedback
        episode.env_mask += [0] * len(feedback)
        if episode.logprobs is not None:
            episode.logprobs += [0.0] * len(feedback)
        return not (self.limit and len(episode.completion) >= self.limit)  # else the completion budget is spent

    async def summarize(self, requests: list[list[dict[str, str]]]) -> list[str]:
        """Every request in one batched generation (each a fresh conversation with its one user message)."""
        done, _ = self.generate([self.chat.user_turn(messages[0]["content"]) for messages in requests])
        return [self.chat.decode(ids) for ids in done]

    def generate(self, prompts: list[list[int]]) -> tuple[list[list[int]], list[list[float]] | None]:
        """One trainer generation call, made even with no prompt where it is a collective call across ranks."""
        return self.generate_ids(prompts, self.trainer) if prompts or self.lockstep else ([], None)


def _run(coroutine: Any) -> Any:
    """Run `coroutine` to its end from TRL's synchronous rollout call: on this thread, or, where this thread runs an
    event loop already (a notebook), on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernel-gym-trl-loop") as thread:
        return thread.submit(asyncio.run, coroutine).result()


class _PolicySummarizer(ModelSummarizer):
    """The trainer's model as the summarizer. Its summaries are filled in by the rollout's batched calls; a miss
    (or a failure) asks the model alone, then falls back to the extractive summary."""

    def __init__(self, chat: ChatTokens, generate: Generate, trainer: Any, **kwargs: Any):
        self.chat, self.trainer, self._generate_ids = chat, trainer, generate
        super().__init__(self._one, **kwargs)

    def _one(self, messages: list[dict[str, str]]) -> str:
        if _collective(self.trainer):
            raise RuntimeError("not prefetched, and vLLM server generation cannot be called from one rank alone")
        ids, _ = self._generate_ids([self.chat.user_turn(messages[0]["content"])], self.trainer)
        return self.chat.decode(ids[0])


def _collective(trainer: Any) -> bool:
    """Generation is a collective call across ranks (vLLM server mode): every rank calls it, even with no prompt."""
    return bool(getattr(trainer, "use_vllm", False)) and getattr(trainer, "vllm_mode", None) == "server"


def _put(out: dict[str, list[Any]], slot: int, sample: dict[str, Any], ret: float, score: float,
         info: dict[str, Any]) -> None:
    for key in ("prompt_ids", "completion_ids", "logprobs"):
        out[key][slot] = sample[key]
    out["kernel_reward"][slot] = out["kernel_return"][slot] = float(ret)
    out["kernel_score"][slot] = float(score)
    out["kernel_turn"][slot] = int(info["turn"])
    out["kernel_task"][slot] = info["task"]
    out["kernel_correct"][slot] = bool(info["correct"])
    out["kernel_error"][slot] = info.get("error") or ""
    out["kernel_infra_failure"][slot] = bool(info.get("infra_failure"))
    out["kernel_summary_fallback"][slot] = info.get("summary_source") == "fallback"
