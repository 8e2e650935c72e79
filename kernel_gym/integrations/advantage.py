"""One advantage option for every trainer adapter: which per-turn samples are normalized together.

In "turns" mode (Kevin's recipe) every turn of an episode is its own sample, its reward the discounted return
`R_t = kernel_gym.rewards.aggregate(scores, gamma, aggregation)[t]`. A GRPO-style advantage is that reward minus the
mean of its group, over the group's standard deviation. Which samples form the group is this option:

- "group_all_turns" (the default everywhere): every turn of the n episodes of one task, n·T returns normalized
  together. This is Kevin's recipe: "Kevin: Multi-Turn RL for Generating CUDA Kernels" (Baronio, Marsella, Pan, Guo,
  Alberti; arXiv 2507.11948, and the Kevin-32B post, cognition.ai/blog/kevin-32b) samples n parallel trajectories
  of each task, splits them into one sample per turn with its discounted return, and normalizes those returns
  GRPO-style within the task's group, the group being the task's trajectories with all their turns (as we read
  both texts; neither groups turns by their index).
- "per_turn_index": turn t of the n episodes of one task (n returns a group), each turn index on its own: a turn is
  compared only with refinements made at the same depth.

How each trainer gets it (docs/trainers.md, "One advantage option"):

| option | TRL (`KernelRefineRollout`) | verl (`KernelRefineAgentLoop`) | OpenRLHF (`openrlhf_train`) |
|---|---|---|---|
| group_all_turns | GRPO's own group: num_generations = n·max_turns slots; R_t handed as is | grpo_vectorized's group, the prompt's uid: every turn of its rollout.n episodes; R_t as is | the advantage computed here is the sample's reward, with estimator flash_reinforce (minus the batch mean: 0) |
| per_turn_index | the advantage computed here is the slot's reward, with scale_rewards="none" (GRPO then subtracts the group's mean: 0) | refused: verl groups rows by the prompt's uid only | turn-major samples, grouped by OpenRLHF's group estimators (group_norm: the same z-score) |

A group of a single episode is warned about (`single_episode_warning`): with group_all_turns its turns are compared with
one another (turn 1 against turn T), with per_turn_index every advantage is 0.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence

from kernel_gym.errors import ConfigError

logger = logging.getLogger(__name__)

ADVANTAGES = ("group_all_turns", "per_turn_index")
DEFAULT_ADVANTAGE = "group_all_turns"
"""Kevin's recipe (see the module docstring); the default of every adapter."""
ENV_ADVANTAGE = "KERNEL_GYM_ADVANTAGE"
"""The option for adapters configured by environment variables (OpenRLHF's launcher and its Ray workers)."""
EPS = 1e-6
"""Added to the group's standard deviation (verl's GRPO epsilon; TRL adds 1e-4, OpenRLHF's group_norm 1e-9)."""


def advantage_option(value: str | None = None) -> str:
    """A checked option: `value`, else $KERNEL_GYM_ADVANTAGE, else the default (group_all_turns)."""
    value = value or os.environ.get(ENV_ADVANTAGE, "").strip() or DEFAULT_ADVANTAGE
    if value not in ADVANTAGES:
        raise ConfigError(f"advantage must be one of {ADVANTAGES}, got {value!r}")
    return value


def group_key(turn: int, option: str) -> int:
    """Within one task's episodes, the group of a turn sample (turn numbers are 1-based): one group for
    group_all_turns (0), the turn number for per_turn_index."""
    return 0 if advantage_option(option) == "group_all_turns" else int(turn)


def normalize(returns: Sequence[Sequence[float]], option: str = DEFAULT_ADVANTAGE, *, eps: float = EPS,
              scale: bool = True) -> list[list[float]]:
    """The advantages of one task's episodes (`returns[e][t]`: R_t of episode e): each return minus the mean of its
    group (`group_key`), over the group's sample standard deviation plus `eps` (`scale`=False: no division). A
    group of one sample gets 0."""
    groups: dict[int, list[float]] = {}
    for episode in returns:
        for t, value in enumerate(episode, start=1):
            groups.setdefault(group_key(t, option), []).append(float(value))
    stats = {key: _mean_std(values) for key, values in groups.items()}
    out = []
    for episode in returns:
        row = []
        for t, value in enumerate(episode, start=1):
            mean, std = stats[group_key(t, option)]
            row.append((float(value) - mean) / (std + eps) if scale else float(value) - mean)
        out.append(row)
    return out


def _mean_std(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def single_episode_warning(episodes: int, option: str, where: str) -> str | None:
    """The WARNING an adapter logs (once) when an advantage group holds a single episode (`episodes` < 2), else
    None."""
    if episodes >= 2:
        return None
    effect = ("its advantages compare that episode's turns with one another (turn 1 against the last turn), not "
              "episodes" if advantage_option(option) == "group_all_turns" else "every advantage is 0")
    return (f"kernel-gym: {where}: each advantage group is a single episode, so {effect}; sample at least 2 episodes "
            f"of each task (advantage={option})")
