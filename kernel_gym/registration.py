"""Every registered environment id, in one place. A change of reward or observation meaning bumps -vN."""

from __future__ import annotations

import gymnasium as gym

ENV_IDS = {
    "KernelRefine-v0": "kernel_gym.env:KernelRefineEnv",
}


def register_envs() -> None:
    for env_id, entry_point in ENV_IDS.items():
        if env_id not in gym.registry:
            # No TimeLimit wrapper: the env truncates at max_turns itself and reports why. Nondeterministic:
            # timings (and so speedups and scores) differ between runs even under the same seed and actions.
            gym.register(id=env_id, entry_point=entry_point, disable_env_checker=False, nondeterministic=True)
