"""Fixtures of the reward-hacking suite: one warm CPU evaluator for the whole directory, and two ways to judge code.

- `through_env(code, task=, checks=)` steps a real `KernelRefine-v0` env (static rules, then the sandbox) and
  returns its `info` dict (score, correct, hacks, error, ...).
- `bypass(code, task=, **config)` sends an `EvalJob` straight to the sandbox's `WorkerPool`, skipping the static
  rules, so the dynamic defenses (and the sandbox) can be shown to stop the attack on their own.

Attack solutions live in attacks/, genuine ones in genuine/, extra task files in tasks/ (the env takes a path).
"""

from __future__ import annotations

import pytest
from ah_helpers import make_job, response, task_ref


@pytest.fixture(scope="session")
def ah_evaluator():
    """Static checks + one CPU worker, shared by every test of this directory."""
    from kernel_gym.judge.local import LocalEvaluator

    ev = LocalEvaluator("cpu", workers=1)
    ev.start()
    ev.pool.warm_up()
    yield ev
    ev.close()


@pytest.fixture(scope="session")
def through_env(ah_evaluator):
    import gymnasium as gym

    import kernel_gym  # noqa: F401 - registers the env id

    def step(code: str, task: str = "level1/relu", checks: str = "strict", evaluator=None, **env_kwargs) -> dict:
        env = gym.make("KernelRefine-v0", task=task_ref(task), device="cpu", checks=checks, max_turns=1,
                       evaluator=evaluator or ah_evaluator, **env_kwargs)
        try:
            env.reset(seed=0)
            _, reward, _, _, info = env.step(response(code))
        finally:
            env.close()
        assert reward == info["score"]
        return info

    return step


@pytest.fixture(scope="session")
def bypass(ah_evaluator):
    """Evaluate code in the sandbox with the static rules skipped; returns the EvalResult."""

    def run(code: str, task: str = "level1/relu", pool=None, **config):
        return (pool or ah_evaluator.pool).evaluate(make_job(code, task, **config))

    return run


@pytest.fixture
def fresh_evaluator():
    """A private evaluator (static checks + one CPU worker), for attacks that poison or leak into their worker:
    pass it as `evaluator=` to through_env or its `.pool` as `pool=` to bypass."""
    from kernel_gym.judge.local import LocalEvaluator

    ev = LocalEvaluator("cpu", workers=1)
    ev.start()
    ev.pool.warm_up()
    yield ev
    ev.close()
