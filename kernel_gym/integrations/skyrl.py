"""SkyRL adapter: a KernelRefine episode as a SkyRL-gym `BaseTextEnv` (skyrl-gym 0.4.0), registered as "kernel_gym".

Importing this module registers the env with skyrl_gym (`skyrl_gym.make("kernel_gym", env_config=..., extras=...)`),
which is how SkyRL's generator (`SkyRLGymGenerator.agent_loop`) builds one env per trajectory: `init(prompt)`, then
`step(response)` per turn until `done`, `get_metrics()`, `close()`.

- A dataset row names its episode in `extra_info["kernel_gym"]` (what the generator passes as `extras`): a task id
  or a JSON object / dict with "task", any `gym.make` keyword and "seed". The row's prompt may hold a system message;
  its user turn is replaced by the env's own prompt (the task, the reference code, the rules).
- `env_config` (SkyRL's `environment.skyrl_gym.kernel_gym` section): `env` (gym.make keywords, the defaults of every
  episode), `evaluator` ("local", "ray[:address]", "http(s)://host:port"; null: $KERNEL_GYM_EVALUATOR), `eval_workers`,
  `followup` ("feedback" or "observation": the env's whole observation with Kevin's summaries of earlier turns).
- `max_turns`: the label's, else the generator's (`generator.max_turns`, which SkyRL puts in `extras`), else `env`'s.
- Rewards: each step's reward is the env's (the turn's score s_t, what `gym.make` gives); SkyRL places it on the
  last token of that turn (turn-level rewards) and its advantage estimator discounts. The per-turn returns
  R_t = `kernel_gym.rewards.aggregate(scores, gamma, aggregation)[t]` are in the last step's `metadata["returns"]`
  and in `get_metrics()` ("kernel/return" = R_1). `env: {reward_mode: return}` gives 0 per step and R_1 at the end.

Evaluation never runs in the generator's process: every env sends its jobs to the process's shared evaluator.
"""

from __future__ import annotations

import logging
from typing import Any

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from kernel_gym.integrations.hub_episode import HubEpisode, episode_metrics, turn_numbers

logger = logging.getLogger(__name__)

ENV_ID = "kernel_gym"
LABEL_KEY = "kernel_gym"
"""The key of a row's `extra_info` (SkyRL's env extras) that holds the episode's label."""


def register(env_id: str = ENV_ID) -> None:
    """Register `KernelGymTextEnv` with skyrl_gym under `env_id` (done for "kernel_gym" at import)."""
    if env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=f"{__name__}:KernelGymTextEnv")


def _plain(value: Any) -> dict[str, Any]:
    """A hydra/OmegaConf node (SkyRL's config) -> a plain dict."""
    if value is None:
        return {}
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(value):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # omegaconf comes with skyrl-gym; plain values need no conversion
        pass
    return dict(value)


def row_label(extras: dict[str, Any]) -> Any:
    """The episode's label from SkyRL's env extras: `extra_info["kernel_gym"]`, or a top-level "kernel_gym"."""
    extra_info = extras.get("extra_info") or {}
    return extra_info.get(LABEL_KEY) if isinstance(extra_info, dict) and LABEL_KEY in extra_info else \
        extras.get(LABEL_KEY)


class KernelGymTextEnv(BaseTextEnv):
    """One KernelRefine episode per SkyRL trajectory (see the module docstring)."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None):
        super().__init__()
        config, extras = _plain(env_config), dict(extras or {})
        defaults = dict(config.get("env") or {})
        if extras.get("max_turns") is not None:
            defaults["max_turns"] = int(extras["max_turns"])
        self.hub = HubEpisode(row_label(extras), defaults=defaults, evaluator=config.get("evaluator"),
                              eval_workers=config.get("eval_workers"), followup=config.get("followup", "feedback"),
                              where=f"a SkyRL row's extra_info[{LABEL_KEY!r}]")
        self.max_turns = self.hub.max_turns

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """The first prompt: the row's system messages, then the env's own prompt as the user turn."""
        observation = self.hub.start()
        system = [m for m in prompt or [] if m.get("role") == "system"]
        return [*system, {"role": "user", "content": observation}], {"max_turns": self.max_turns}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        turn = self.hub.step(action)
        metadata: dict[str, Any] = {LABEL_KEY: turn_numbers(turn.info)}
        if turn.done:
            record = self.hub.record()
            metadata.update(scores=record["scores"], returns=record["returns"])
        observations = [] if turn.done else [{"role": "user", "content": turn.message}]
        return BaseTextEnvStepOutput(observations=observations, reward=turn.reward, done=turn.done,
                                     metadata=metadata, postprocessed_action=None)

    def get_metrics(self) -> dict[str, Any]:
        return episode_metrics(self.hub.record())

    def close(self) -> None:
        self.hub.close()


register()
