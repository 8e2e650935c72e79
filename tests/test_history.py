"""KernelRefineEnv.restore: an episode rebuilt from its logged steps goes on where the log ends."""

from __future__ import annotations

import pytest

from kernel_gym.errors import ConfigError, EpisodeEndedError
from kernel_gym.history import result_from_info

PROSE = "I would tile the loop by 128, but here is no code yet."


def test_restored_env_shows_the_observation_the_played_one_showed(make_env, respond, relu_code):
    played = make_env(max_turns=3)
    played.reset(seed=1)
    steps = []
    for action in (PROSE, respond(relu_code(body="tl.minimum(x, 0.0)"))):
        obs, _, _, _, info = played.step(action)
        steps.append((action, info))
    restored = make_env(max_turns=3)
    restored.reset(seed=1)
    assert restored.unwrapped.restore(steps, episode_id="e1") == obs
    assert restored.unwrapped.episode_id == "e1" and restored.unwrapped.last_obs == obs
    # the seed stream advanced as the played steps advanced it (one draw per evaluated step)
    assert restored.np_random.integers(2**31 - 1) == played.np_random.integers(2**31 - 1)
    _, _, _, truncated, info = restored.step(PROSE)
    assert truncated and info["turn"] == 3 and info["scores"] == [0.0, 0.0, 0.0]
    assert result_from_info(steps[1][1]).outcome.value == "mismatch"


def test_restore_refuses_what_does_not_fit(make_env):
    env = make_env(max_turns=2)
    env.reset(seed=0)
    _, _, _, _, info = env.step(PROSE)
    with pytest.raises(EpisodeEndedError, match="right after reset"):
        env.unwrapped.restore([(PROSE, info)])
    env.reset(seed=0)
    with pytest.raises(ConfigError, match="turns 1..k"):
        env.unwrapped.restore([(PROSE, {**info, "turn": 2})])
    with pytest.raises(ConfigError, match="none to play"):
        env.unwrapped.restore([(PROSE, info), (PROSE, {**info, "turn": 2})])
    with pytest.raises(ConfigError, match="cannot continue"):
        env.unwrapped.restore([(PROSE, {**info, "task": "level1/tanh"})])
    with pytest.raises(ConfigError, match="lack"):
        env.unwrapped.restore([(PROSE, {k: v for k, v in info.items() if k != "feedback"})])
