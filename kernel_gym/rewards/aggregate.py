"""Per-turn scores -> per-turn returns (Kevin's discounted look-ahead)."""

from __future__ import annotations

from collections.abc import Sequence

from kernel_gym.errors import ConfigError

MODES = ("sum", "max")


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
