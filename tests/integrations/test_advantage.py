"""One advantage option for every adapter: the same episodes through TRL, verl and OpenRLHF give the same advantages.

TRL and OpenRLHF compute advantages inside their own training step (TRL 1.16: GRPOTrainer._generate_and_score_
completions; OpenRLHF 0.11.2: RemoteExperienceMaker.compute_advantages_and_returns, whose module needs flash_attn to
import); for them the test takes what our adapter hands the trainer (TRL: the rollout's reward column in slot order;
OpenRLHF: the flattened samples and the estimator flag the launcher sets) and applies the trainer's formula, whose
lines it first finds in the installed trainer's source. verl's own advantage function runs on the rows our agent loop
builds (`_Turns.output`).
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import pytest
import torch

from kernel_gym.errors import ConfigError
from kernel_gym.integrations.advantage import (
    ADVANTAGES,
    DEFAULT_ADVANTAGE,
    advantage_option,
    normalize,
    single_episode_warning,
)

# two tasks, three episodes of three turns each: the returns R_t
RETURNS = {"level1/relu": [[0.9, 1.6, 1.5], [0.0, 0.4, 1.0], [0.2, 0.5, 1.25]],
           "level1/tanh": [[0.0, 0.0, 0.0], [0.3, 0.75, 1.9], [0.0, 0.1, 0.25]]}
EPISODES, TURNS = 3, 3


def expected(option: str) -> dict[str, list[list[float]]]:
    return {task: normalize(returns, option) for task, returns in RETURNS.items()}


def source(module: str) -> str:
    return Path(importlib.util.find_spec(module).origin).read_text()


def test_the_option_and_its_default():
    assert DEFAULT_ADVANTAGE == "group_all_turns" == advantage_option() and set(ADVANTAGES) == {
        "group_all_turns", "per_turn_index"}
    with pytest.raises(ConfigError, match="advantage must be"):
        advantage_option("per_turn")
    adv = normalize([[1.0, 2.0], [3.0, 4.0]], "group_all_turns")
    assert sum(map(sum, adv)) == pytest.approx(0) and adv[0][0] < adv[0][1] < adv[1][0]
    low, high = normalize([[1.0, 2.0], [3.0, 4.0]], "per_turn_index")
    assert low == pytest.approx([-0.7071, -0.7071], abs=1e-4) and high == pytest.approx([0.7071, 0.7071], abs=1e-4)
    assert normalize([[5.0, 1.0]], "per_turn_index") == [[0.0, 0.0]]  # a group of one
    assert "turn 1 against the last" in single_episode_warning(1, "group_all_turns", "x")
    assert "every advantage is 0" in single_episode_warning(1, "per_turn_index", "x")
    assert single_episode_warning(2, "group_all_turns", "x") is None


# ---- TRL ------------------------------------------------------------------------------------------------------------
def trl_advantages(option: str) -> dict[str, list[list[float]]]:
    pytest.importorskip("trl")
    from kernel_gym.integrations.trl import slot_rewards

    text = source("trl.trainer.grpo_trainer")
    for line in ("mean_grouped_rewards = torch.nanmean(rewards.view(-1, num_generations), dim=1)",
                 "advantages = rewards - mean_grouped_rewards", "advantages = advantages / (std_rewards + 1e-4)",
                 "std_rewards = nanstd(rewards.view(-1, num_generations), dim=1)"):
        assert line in text, f"TRL's GRPO advantage changed: {line!r} is gone"
    num_generations = EPISODES * TURNS  # a GRPO group: one task's episodes, every slot a turn
    column = [r for task in RETURNS for r in slot_rewards(RETURNS[task], EPISODES, option)]
    rewards = torch.tensor(column, dtype=torch.float64)
    grouped = rewards.view(-1, num_generations)
    advantages = rewards - grouped.mean(dim=1).repeat_interleave(num_generations)
    if option == "group_all_turns":  # scale_rewards="group" (TRL's default); per_turn_index needs "none"
        advantages = advantages / (grouped.std(dim=1).repeat_interleave(num_generations) + 1e-4)
    rows = advantages.view(len(RETURNS), EPISODES, TURNS).tolist()
    return dict(zip(RETURNS, rows))


def test_trl_per_turn_index_needs_grpo_to_keep_what_it_is_handed():
    pytest.importorskip("trl")
    from types import SimpleNamespace

    from kernel_gym.integrations.trl import KernelRefineRollout

    rollout = KernelRefineRollout(max_turns=3, advantage="per_turn_index")
    trainer = SimpleNamespace(num_generations=9, args=SimpleNamespace(scale_rewards="none"))
    assert rollout._group_episodes(trainer, 18) == 3
    with pytest.raises(ConfigError, match="scale_rewards='none'"):
        rollout._group_episodes(SimpleNamespace(num_generations=9, args=SimpleNamespace(scale_rewards="group")), 9)
    with pytest.raises(ConfigError, match="multiple of num_generations"):
        rollout._group_episodes(trainer, 6)
    with pytest.raises(ConfigError, match="needs mode='turns'"):
        KernelRefineRollout(mode="episode", advantage="per_turn_index")
    assert KernelRefineRollout(max_turns=3).advantage == "group_all_turns"


# ---- verl -----------------------------------------------------------------------------------------------------------
class _Episode:
    """What `_Turns.output` reads of a played episode."""

    def __init__(self, returns):
        self._returns, self.env_s = returns, [0.1] * len(returns)
        self.scores = [0.0] * len(returns)
        self.infos = [{"turn": t, "score": 0.0} for t in range(1, len(returns) + 1)]

    def returns(self):
        return self._returns


def verl_advantages(option: str) -> dict[str, list[list[float]]]:
    pytest.importorskip("verl.experimental.agent_loop")
    from types import SimpleNamespace

    import numpy as np
    from verl.protocol import DataProto
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    from kernel_gym.integrations.verl import _Turns

    assert option == "group_all_turns"  # verl's group is the prompt's uid (the adapter refuses per_turn_index)
    keys, rows, uids = [], [], []
    for uid, task in enumerate(RETURNS):
        for session, returns in enumerate(RETURNS[task]):
            policy = _Turns(SimpleNamespace(response_length=8), [], {})
            policy.turns = [([1, 2], [3, 4, 5], [1, 1, 1], None, {}, {}) for _ in returns]
            for index, out in enumerate(policy.output(_Episode(returns))):  # the rows our agent loop hands verl
                keys.append(f"u{uid}_{session}_{index}")
                rows.append(out)
                uids.append(f"u{uid}")  # verl's worker gives every row of a prompt's rollout.n sessions its uid
    width = max(len(r.response_ids) for r in rows)
    mask = torch.zeros(len(rows), width)
    rewards = torch.zeros(len(rows), width)
    for i, row in enumerate(rows):
        mask[i, : len(row.response_mask)] = torch.tensor(row.response_mask, dtype=torch.float32)
        rewards[i, len(row.response_ids) - 1] = row.reward_score  # verl puts the score on the last token
    data = DataProto.from_single_dict({"response_mask": mask, "token_level_rewards": rewards,
                                       "uid": np.array(uids, dtype=object)})
    adv = compute_advantage_for_multi_trajectories(data, keys, adv_estimator="grpo_vectorized", config=None)
    first = adv.batch["advantages"][:, 0].tolist()
    return {task: [first[(u * EPISODES + e) * TURNS:(u * EPISODES + e + 1) * TURNS] for e in range(EPISODES)]
            for u, task in enumerate(RETURNS)}


# ---- OpenRLHF -------------------------------------------------------------------------------------------------------
def openrlhf_advantages(option: str) -> dict[str, list[list[float]]]:
    from kernel_gym.integrations.openrlhf_train import advantage_args, flatten_responses

    text = source("openrlhf.trainer.ppo_utils.experience_maker")
    for line in ("rewards = rewards.reshape(-1, args.rollout.n_samples_per_prompt)",
                 "rewards = (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-9)",
                 'elif args.algo.advantage.estimator == "flash_reinforce":', "rewards = rewards - rewards.mean()"):
        assert line in text, f"OpenRLHF's advantage changed: {line!r} is gone"
    estimator = advantage_args([], option)[-1]  # the flag the launcher adds
    flat = []
    for returns in RETURNS.values():  # each prompt: its n executor results, a list of turn samples each
        results = [[{"reward": r, "extra_logs": {"kernel/turn": t}} for t, r in enumerate(ep, 1)] for ep in returns]
        flat += flatten_responses(results, option)
    rewards = torch.tensor([s["reward"] for s in flat], dtype=torch.float64).reshape(-1, EPISODES)
    if estimator == "group_norm":
        rewards = (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-9)
    else:
        assert estimator == "flash_reinforce"
        rewards = rewards - rewards.mean()
    values = rewards.reshape(-1).tolist()  # turn-major per prompt: index (prompt, turn, episode)
    return {task: [[values[(u * TURNS + t) * EPISODES + e] for t in range(TURNS)] for e in range(EPISODES)]
            for u, task in enumerate(RETURNS)}


@pytest.mark.parametrize("option", ADVANTAGES)
def test_the_same_episodes_give_the_same_advantages_in_every_trainer(option):
    want = expected(option)
    got = {"trl": trl_advantages(option), "openrlhf": openrlhf_advantages(option)}
    if option == "group_all_turns":
        got["verl"] = verl_advantages(option)
    for trainer, advantages in got.items():
        for task in RETURNS:
            # the epsilons differ (TRL adds 1e-4 to the std, verl 1e-6, OpenRLHF 1e-9): equal to 1e-3 relative
            assert advantages[task] == [pytest.approx(row, rel=1e-3, abs=1e-6) for row in want[task]], (trainer, task)
    if option == "group_all_turns":  # turn 1 and turn 3 of one task are compared with each other
        assert want["level1/relu"][1][0] < 0 < want["level1/relu"][1][2]


def test_openrlhf_launcher_sets_and_checks_the_estimator(caplog):
    from kernel_gym.integrations.openrlhf_train import advantage_args, flatten_responses

    flag = "--algo.advantage.estimator"
    n = ["--rollout.n_samples_per_prompt", "4"]
    assert advantage_args(n, "group_all_turns") == [*n, flag, "flash_reinforce"]
    assert advantage_args(n, "per_turn_index") == [*n, flag, "group_norm"]
    assert advantage_args([*n, f"{flag}=rloo"], "per_turn_index") == [*n, f"{flag}=rloo"]
    assert advantage_args([flag, "group_norm"], "group_all_turns", mode="sum") == [flag, "group_norm"]
    with pytest.raises(ConfigError, match="flash_reinforce"):
        advantage_args([*n, flag, "group_norm"], "group_all_turns")
    with pytest.raises(ConfigError, match="group_norm"):
        advantage_args([*n, flag, "flash_reinforce"], "per_turn_index")
    with caplog.at_level(logging.WARNING):
        advantage_args([], "group_all_turns")  # n_samples_per_prompt defaults to 1 in OpenRLHF
    assert "single episode" in caplog.text
    # a sum-mode sample (one dict per episode) passes through untouched; the return is kept beside the advantage
    assert flatten_responses([{"reward": 2.0}, {"reward": 1.0}]) == [{"reward": 2.0}, {"reward": 1.0}]
    (first, *_), = [flatten_responses([[{"reward": 1.0}], [{"reward": 3.0}]])]
    assert first["extra_logs"]["kernel/return"] == 1.0 and first["reward"] == pytest.approx(-0.7071, abs=1e-4)
