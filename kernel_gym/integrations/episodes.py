"""The episode loop every trainer adapter (OpenRLHF, verl, TRL) runs, with no framework imported.

An adapter reads a dataset label into `gym.make` keywords (`episode_settings`), builds the env (`make_env`), wraps
it in an `Episode`, and hands its episodes to `play` with a `Policy`: the part that is its trainer's own (how a
turn's answers are generated, how a conversation grows by the feedback, how the policy writes its summaries).
`play` runs the turns; the adapter then reads each finished `Episode` (its infos, `returns()`, `reward()`) into its
trainer's samples.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from concurrent.futures import Executor
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.integrations.shared_evaluator import offload, shared_evaluator
from kernel_gym.rewards import aggregate

logger = logging.getLogger(__name__)

Messages = list[dict[str, str]]

FOLLOWUP = ("Result of turn {turn}: {feedback}\n\nTurn {next} of {max_turns}: improve on your best correct kernel "
            "(or fix the error above) and answer with your reasoning and the complete solution in one ```python "
            "code block.")


def followup(info: dict[str, Any], max_turns: int) -> str:
    """The user turn after a step: its feedback and what the next turn asks."""
    return FOLLOWUP.format(turn=info["turn"], feedback=info["feedback"], next=info["turn"] + 1, max_turns=max_turns)


# ---- labels and envs ------------------------------------------------------------------------------------------------
def parse_label(label: Any, where: str = "a label") -> dict[str, Any]:
    """A label -> gym.make keywords (+ `seed`): a dict or JSON object string with at least "task", or a bare task id.
    A chat prompt (a list of messages) is read from its last message's content. `where` names it in errors."""
    if isinstance(label, list) and label and isinstance(label[-1], dict):
        label = label[-1].get("content", "")
    if isinstance(label, dict):
        data = dict(label)
    elif isinstance(label, str) and label.strip().startswith("{"):
        data = json.loads(label)
    elif isinstance(label, str) and label.strip():
        data = {"task": label.strip()}
    else:
        raise ConfigError(f"{where} must be a task id or a JSON object (or dict) with a 'task' key, got {label!r}")
    if not isinstance(data, dict) or not data.get("task"):
        raise ConfigError(f"{where} needs a 'task' key, got {label!r}")
    return data


def episode_settings(label: Any, defaults: dict[str, Any] | None = None,
                     where: str = "a label") -> tuple[dict[str, Any], int | None]:
    """(gym.make keywords, reset seed) of a label's episode: `defaults`, then the label's own keys, which win."""
    settings = {**(defaults or {}), **parse_label(label, where)}
    seed = settings.pop("seed", None)
    return settings, None if seed is None else int(seed)


def make_env(settings: dict[str, Any], *, evaluator: Any = None, shared: Any = shared_evaluator,
             policy_summaries: bool = False):
    """The env of one episode: device "auto" resolved in this process, evaluation on `evaluator` or else on
    `shared(device)` (the process's shared evaluator, which the env does not own), and with `policy_summaries` a
    `policy_summarizer` (the trainer writes the summaries; `play` fills them in)."""
    from kernel_gym.device import local_device
    from kernel_gym.env import KernelRefineEnv

    kwargs = dict(settings)
    device = kwargs.get("device", "auto")
    kwargs["device"] = local_device("auto") if device == "auto" else device
    if device == "auto" and kwargs["device"] == "cpu":
        logger.warning("kernel-gym: device 'auto' found no GPU in this process (a trainer's rollout workers may hold "
                       "none): candidates run on the CPU backend; set the env's device to 'cuda' for GPU kernels")
    if policy_summaries:
        kwargs["summarizer"] = policy_summarizer(int(kwargs.get("summary_chars", 400)))
    return KernelRefineEnv(evaluator=shared(kwargs["device"]) if evaluator is None else evaluator, **kwargs)


# ---- one episode ----------------------------------------------------------------------------------------------------
class Episode:
    """One env's episode as a trainer plays it: the newest observation, and per turn its info, its step reward and
    the seconds it waited on the env."""

    def __init__(self, env: Any):
        self.env = env
        self.observation = ""
        self.infos: list[dict[str, Any]] = []
        self.rewards: list[float] = []
        self.env_s: list[float] = []
        self.done = False
        """The env ended the episode (at `max_turns`; its last info holds `scores` and `returns`)."""
        self.cut = False
        """The adapter ended it first: the trainer's length budget left no room for another answer."""

    @property
    def over(self) -> bool:
        return self.done or self.cut

    @property
    def scores(self) -> list[float]:
        return [float(info["score"]) for info in self.infos]

    def reset(self, seed: int | None = None) -> dict[str, Any]:
        self.observation, info = self.env.reset(seed=seed)
        return info

    def step(self, action_text: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self.env.step(action_text)
        observation, reward, terminated, truncated, info = result
        self.observation = observation
        self.infos.append(info)
        self.rewards.append(float(reward))
        self.done = bool(terminated or truncated)
        return result

    def followup(self) -> str:
        """The user turn after the newest step (its feedback), for a conversation that goes on."""
        return followup(self.infos[-1], self.env.config.max_turns)

    def returns(self) -> list[float]:
        """Each turn's return R_t: the env's own `info["returns"]` when it ended the episode, else
        `aggregate(scores, gamma, aggregation)` of the turns played (an episode cut short)."""
        returns = self.infos[-1].get("returns") if self.infos else None
        if returns is None or len(returns) != len(self.infos):
            returns = aggregate(self.scores, self.env.config.gamma, self.env.config.aggregation)
        return [float(r) for r in returns]

    def reward(self) -> float:
        """The whole conversation's reward: the sum of the env's step rewards (Σ s_t; R_1 with the env's
        `reward_mode="return"`), or, cut short in "return" mode (the env's R_1 never came), R_1 of the turns played."""
        if self.infos and not self.done and self.env.config.reward_mode == "return":
            return self.returns()[0]
        return sum(self.rewards)

    def close(self) -> None:
        self.env.close()  # a shared evaluator stays open (the env does not own it)


# ---- the loop -------------------------------------------------------------------------------------------------------
class Policy:
    """The trainer's side of `play`; each adapter subclasses it."""

    lockstep = False
    """Generation is a collective call across processes (TRL's vLLM server mode): every round calls it, even with
    no episode left to answer."""

    async def answer(self, episodes: list[Episode]) -> list[str]:
        """Each episode's next response text, generated by the trainer (the adapter keeps the tokens it needs)."""
        raise NotImplementedError

    async def follow(self, episode: Episode) -> bool:
        """After a step that did not end `episode`: add its feedback to the conversation (`episode.followup()`);
        False when no room is left for another answer. The default keeps nothing (each turn a fresh prompt)."""
        return True

    async def summarize(self, requests: list[Messages]) -> list[str]:
        """The policy's summaries, one per request (Kevin's self-summaries; not trained on). The default asks
        `summary` once per request; a trainer that batches overrides this."""
        return [await self.summary(messages) for messages in requests]

    async def summary(self, messages: Messages) -> str:
        raise NotImplementedError(f"{type(self).__name__} writes no summaries")


async def play(episodes: list[Episode], policy: Policy, *, rounds: int | None = None, summaries: bool = False,
               threads: Executor | None = None) -> None:
    """Play the (reset) `episodes` to their end, one turn a round: the policy answers every episode still going at
    once (one batched generation where the trainer batches); with `summaries` the policy writes each answer's
    summary first (`prefill_summaries`); every env steps off the event loop (on `threads`, else the process's shared
    pool); then the policy adds each step's feedback to its conversation (`Policy.follow`), and an episode with no
    room left for another answer ends there (`cut`). At most `rounds` rounds (default: the longest `max_turns`)."""
    rounds = rounds or max((e.env.config.max_turns for e in episodes), default=0)
    loop = asyncio.get_running_loop()
    for _ in range(rounds):
        live = [e for e in episodes if not e.over]
        if not live and not policy.lockstep:
            return
        texts = await policy.answer(live)
        start = time.perf_counter()
        if summaries:
            await prefill_summaries(live, texts, policy.summarize)
        steps = [offload(e.step, text) if threads is None else loop.run_in_executor(threads, e.step, text)
                 for e, text in zip(live, texts)]
        await asyncio.gather(*steps)
        elapsed = time.perf_counter() - start
        for e in live:
            e.env_s.append(elapsed)
            if not e.done and not await policy.follow(e):
                e.cut = True


# ---- Kevin's self-summaries from the trainer's own engine -----------------------------------------------------------
def _made_by_the_trainer(messages: Any) -> str:
    raise RuntimeError("no summary from the trainer's engine for this turn (its request failed or was not made)")


def policy_summarizer(max_chars: int = 400) -> Any:
    """The env's summarizer when the trainer writes the summaries (`prefill_summaries` before each step): a
    `ModelSummarizer` whose own call only fails, so a turn the trainer could not summarize gets the extractive
    summary, with `info["summary_source"] == "fallback"` and the reason in `info["summary_error"]`."""
    from kernel_gym.feedback.summarize import ModelSummarizer

    return ModelSummarizer(_made_by_the_trainer, max_chars=max_chars)


async def prefill_summaries(episodes: list[Episode], texts: list[str], summarize: Any) -> None:
    """Before the steps of `texts`: the policy's summary of each one's reasoning, from one `await summarize(requests)
    -> answers` for all of them, put in each env's summarizer cache where its step finds it. Reasonings already
    cached are not asked again; a failed request only logs (those steps then fall back and say so in `info`)."""
    from kernel_gym.actions import parse_action
    from kernel_gym.feedback.summarize import clean_summary

    wanted = []
    for episode, text in zip(episodes, texts):
        cfg, summarizer = episode.env.config, episode.env.summarizer
        reasoning = parse_action(text, backend=cfg.backend, max_response_chars=cfg.max_response_chars,
                                 max_code_chars=cfg.max_code_chars).reasoning
        if reasoning and not summarizer.cached(reasoning):
            wanted.append((summarizer, reasoning))
    try:
        answers = await summarize([summarizer.messages(reasoning) for summarizer, reasoning in wanted])
    except Exception as e:  # noqa: BLE001 - the env's step falls back to the extractive summary and reports it
        logger.warning("kernel-gym: the policy's summary request failed (%s: %s)", type(e).__name__, e)
        for summarizer, reasoning in wanted:  # the step's info["summary_error"] carries the real exception
            summarizer.fail(reasoning, f"the trainer's summary request failed: {type(e).__name__}: {e}")
        return
    for (summarizer, reasoning), answer in zip(wanted, answers):
        text = clean_summary(answer, summarizer.max_chars)
        if text:
            summarizer.prefill(reasoning, text)
        else:
            summarizer.fail(reasoning, "the trainer's engine answered with an empty summary")
