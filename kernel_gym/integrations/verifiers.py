"""verifiers adapter: KernelRefine episodes as a verifiers `MultiTurnEnv` scored by a `Rubric` (Prime Intellect's
environments hub and prime-rl; verifiers 0.3.1, its classic stack `verifiers.legacy`, which 0.4.0 removed).

    from kernel_gym.integrations.verifiers import load_environment

    env = load_environment(suite="level1", max_turns=4, env_kwargs={"device": "cuda"})
    results = await env.generate(env.get_dataset(), client=ClientConfig(...), model="...")

`load_environment(...)` is the hub's entry point (a hub package re-exports it). Each dataset row names its episode in
`info["kernel_gym"]` (a task id or a JSON object with "task", any `gym.make` keyword and "seed"); `setup_state`
replaces the row's prompt by the env's own (the task, the reference code, the rules). verifiers' own rollout loop
then generates each turn; after each answer (`add_trajectory_step`) the env evaluates it, and the next user turn is
its feedback (`followup="feedback"`) or the env's whole observation with Kevin's summaries of the earlier turns
(`followup="observation"`). The episode ends at the env's `max_turns` (a verifiers stop condition).

Rewards, per turn and per rollout:
- each trajectory step's `reward` is that turn's return `R_t = kernel_gym.rewards.aggregate(scores, gamma,
  aggregation)[t]` (Kevin's per-turn sample reward, set when the episode ends), and its `extras["kernel_gym"]` holds
  the turn's score `s_t` (= `gym.make`'s step reward) and outcome;
- the rubric (`KernelRubric`): reward `kernel_return` (R_1, weight 1); metrics (weight 0) `kernel_score_sum`
  (Σ s_t), `kernel_best_score`, `kernel_correct`, `kernel_best_speedup`, `kernel_turns`, `kernel_hacks`;
- `state["kernel_gym"]`: the episode's record (task, scores, returns, per-turn numbers), JSON (a state column).

Evaluation goes to the env's evaluator: `evaluator=` an evaluator object, or a spec string ("local",
"ray[:address]", "http(s)://host:port"; None: $KERNEL_GYM_EVALUATOR), shared by every rollout of the process; env
steps run off verifiers' event loop.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import verifiers.legacy as vf
from verifiers.legacy.utils.message_utils import normalize_messages

from kernel_gym.integrations.hub_episode import HubEpisode, episode_metrics, turn_numbers
from kernel_gym.integrations.shared_evaluator import offload

logger = logging.getLogger(__name__)

LABEL_KEY = "kernel_gym"
"""The key of a row's `info` that holds the episode's label, and of the state that holds its record."""


def _field(message: Any, name: str, default: Any = None) -> Any:
    return message.get(name, default) if isinstance(message, dict) else getattr(message, name, default)


def message_text(messages: Any) -> str:
    """The text of a completion (verifiers' messages: pydantic models or dicts, content a string or parts)."""
    parts = []
    for message in messages if isinstance(messages, list) else [messages]:
        content = _field(message, "content", "")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(str(_field(p, "text", "") or "") for p in content or [])
    return "".join(parts)


class KernelRubric(vf.Rubric):
    """The episode's rewards, read from its record in `state["kernel_gym"]` (see the module docstring)."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.add_reward_func(self.kernel_return, weight=1.0)
        for metric in (self.kernel_score_sum, self.kernel_best_score, self.kernel_correct, self.kernel_best_speedup,
                       self.kernel_turns, self.kernel_hacks):
            self.add_metric(metric)

    @staticmethod
    def _metrics(state: Any) -> dict[str, float]:
        record = state.get(LABEL_KEY) or {"turns": [], "scores": [], "returns": [], "reward": 0.0}
        return episode_metrics(record)

    async def kernel_return(self, state: Any) -> float:
        """R_1: the discounted return of the whole episode."""
        return self._metrics(state)["kernel/return"]

    async def kernel_score_sum(self, state: Any) -> float:
        return float(sum((state.get(LABEL_KEY) or {}).get("scores", [])))

    async def kernel_best_score(self, state: Any) -> float:
        return self._metrics(state)["kernel/best_score"]

    async def kernel_correct(self, state: Any) -> float:
        return self._metrics(state)["kernel/correct"]

    async def kernel_best_speedup(self, state: Any) -> float:
        return self._metrics(state)["kernel/best_speedup"]

    async def kernel_turns(self, state: Any) -> float:
        return self._metrics(state)["kernel/turns"]

    async def kernel_hacks(self, state: Any) -> float:
        return self._metrics(state)["kernel/hacks"]


class KernelRefineMultiTurnEnv(vf.MultiTurnEnv):
    """A verifiers multi-turn environment whose every rollout is one KernelRefine episode.

    `env_kwargs`: `gym.make` keywords, the defaults of every episode (a row's label wins); `evaluator`: an
    evaluator or a spec string (see the module docstring); `followup`: "feedback" or "observation".
    """

    def __init__(self, *, env_kwargs: dict[str, Any] | None = None, evaluator: Any = None,
                 eval_workers: int | None = None, followup: str = "feedback", **kwargs: Any):
        kwargs.setdefault("rubric", KernelRubric())
        super().__init__(max_turns=-1, **kwargs)  # the env ends each episode at its own max_turns
        self.env_kwargs = dict(env_kwargs or {})
        self.evaluator, self.eval_workers, self.followup = evaluator, eval_workers, followup
        self._episodes: dict[str, HubEpisode] = {}

    async def setup_state(self, state: Any) -> Any:
        info = state.get("info") or {}
        label = info.get(LABEL_KEY) if isinstance(info, dict) else None
        hub = HubEpisode(label, defaults=self.env_kwargs, evaluator=self.evaluator, eval_workers=self.eval_workers,
                         followup=self.followup, where=f"a verifiers row's info[{LABEL_KEY!r}]")
        self._episodes[state["trajectory_id"]] = hub
        observation = await offload(hub.start)
        system = [m for m in state.get("prompt") or [] if _field(m, "role") == "system"]
        state["prompt"] = normalize_messages([*system, {"role": "user", "content": observation}],
                                             field_name="kernel_gym prompt")
        return state

    async def add_trajectory_step(self, state: Any, trajectory_step: Any) -> None:
        """Each answer is evaluated as soon as it is in: its score goes on the step (its return at the end)."""
        await super().add_trajectory_step(state, trajectory_step)
        hub = self._episodes[state["trajectory_id"]]
        turn = await offload(hub.step, message_text(trajectory_step["completion"]))
        trajectory_step["reward"] = turn.reward
        trajectory_step["extras"] = {**(trajectory_step.get("extras") or {}), LABEL_KEY: turn_numbers(turn.info)}
        state["kernel_gym_next"] = turn.message

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> list[dict[str, str]]:
        return [{"role": "user", "content": state.pop("kernel_gym_next", None) or ""}]

    @vf.stop
    async def kernel_episode_over(self, state: Any) -> bool:
        hub = self._episodes.get(state["trajectory_id"])
        return hub is not None and hub.over

    @vf.cleanup
    async def close_kernel_episode(self, state: Any) -> None:
        """The episode's record, every step's reward set to its return R_t (an episode cut short by verifiers
        gets the returns of the turns it played), then the env closed (the shared evaluator stays open)."""
        hub = self._episodes.pop(state["trajectory_id"], None)
        if hub is None:
            return
        try:
            record = hub.record()
            steps = state.get("trajectory") or []
            for step, ret in zip(steps, record["returns"]):
                step["reward"] = float(ret)
            record["turn_rewards"] = [float(step["reward"]) for step in steps]
            state[LABEL_KEY] = json.loads(json.dumps(record))
        finally:
            await offload(hub.close)


def kernel_dataset(suite: str | None = None, *, tasks: list[str] | None = None, split: str | None = "train",
                   repeat: int = 1, **label: Any):
    """A `datasets.Dataset` of one row per task: `question` (the task id; the env renders the real prompt) and
    `info["kernel_gym"]` (a JSON label: the task and `label`'s `gym.make` keywords)."""
    from datasets import Dataset

    from kernel_gym.errors import ConfigError
    from kernel_gym.tasks import list_tasks

    tasks = list(tasks) if tasks is not None else list_tasks(suite, split)
    if not tasks:
        raise ConfigError(f"no tasks for suite={suite!r}, split={split!r}")
    rows = [{"question": task, "answer": "", "info": {LABEL_KEY: json.dumps({"task": task, **label})}}
            for task in tasks] * max(1, repeat)
    return Dataset.from_list(rows)


def load_environment(suite: str = "level1", *, tasks: list[str] | None = None, split: str | None = "train",
                     max_turns: int = 4, env_kwargs: dict[str, Any] | None = None, evaluator: Any = None,
                     eval_workers: int | None = None, followup: str = "feedback",
                     **kwargs: Any) -> KernelRefineMultiTurnEnv:
    """The environments hub's entry point: a `KernelRefineMultiTurnEnv` over a suite's tasks (or `tasks`)."""
    env_kwargs = {"max_turns": max_turns, **(env_kwargs or {})}
    kwargs.setdefault("dataset", kernel_dataset(suite if tasks is None else None, tasks=tasks, split=split))
    return KernelRefineMultiTurnEnv(env_kwargs=env_kwargs, evaluator=evaluator, eval_workers=eval_workers,
                                    followup=followup, **kwargs)
