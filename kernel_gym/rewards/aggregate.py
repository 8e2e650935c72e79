"""Per-turn scores -> per-turn returns (Kevin's discounted look-ahead), and what each step's reward is."""

from __future__ import annotations

from collections.abc import Sequence

from kernel_gym.errors import ConfigError

MODES = ("sum", "max")
REWARD_MODES = ("score", "return")


def aggregate(scores: Sequence[float], gamma: float = 0.4, mode: str = "sum") -> list[float]:
    """Return R_t for every turn t of an episode.

    - sum: R_t = sum_{i>=t} gamma^(i-t) * s_i
    - max: R_t = max_{i>=t} gamma^(i-t) * s_i
    """
    if mode not in MODES:
        raise ConfigError(f"aggregation must be one of {MODES}, got {mode!r}")
    if not 0.0 <= gamma <= 1.0:
        raise ConfigError(f"gamma must be in [0, 1], got {gamma!r}")
    returns: list[float] = [0.0] * len(scores)
    running = 0.0
    for t in reversed(range(len(scores))):
        s = float(scores[t])
        if t == len(scores) - 1:
            running = s
        elif mode == "sum":
            running = s + gamma * running
        else:
            running = max(s, gamma * running)
        returns[t] = running
    return returns


def step_reward(scores: Sequence[float], *, last: bool, gamma: float = 0.4, mode: str = "sum",
                reward_mode: str = "score") -> float:
    """The reward of the step that produced `scores[-1]` (`scores` = the episode's scores so far).

    - "score": the turn's own score, s_t (Gymnasium's per-step reward; summing them gives Σ s_t).
    - "return": 0 on every step but the last, which gets R_1 = aggregate(scores, gamma, mode)[0], the episode's
      return from its first turn; so the undiscounted sum of an episode's rewards is exactly R_1.
    """
    if reward_mode not in REWARD_MODES:
        raise ConfigError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
    if reward_mode == "score":
        return float(scores[-1])
    return aggregate(scores, gamma, mode)[0] if last else 0.0
