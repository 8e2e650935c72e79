"""The episode loop the trainer adapters share (`kernel_gym.integrations.episodes`), on scripted envs: no trainer,
no evaluation. The adapters' own tests run it inside OpenRLHF, verl and TRL."""

from __future__ import annotations

import asyncio

import pytest

from kernel_gym.actions import parse_action
from kernel_gym.config import EnvConfig
from kernel_gym.errors import ConfigError
from kernel_gym.feedback.summarize import summarize_turn
from kernel_gym.integrations.episodes import (
    Episode,
    Policy,
    episode_settings,
    parse_label,
    play,
    policy_summarizer,
)
from kernel_gym.rewards import aggregate, step_reward


class ScriptedEnv:
    """KernelRefineEnv's step contract with scripted scores: rewards, truncation and the last step's returns as the
    env computes them, and the summary each step would show."""

    def __init__(self, scores, **config):
        self.scores = list(scores)
        self.config = EnvConfig(max_turns=len(self.scores), **config)
        self.summarizer = policy_summarizer()
        self.played, self.summaries, self.errors, self.closed = [], [], [], False

    def reset(self, seed=None):
        self.played = []
        return "turn 1 prompt", {}

    def step(self, action):
        cfg = self.config
        self.played.append(self.scores[len(self.played)])
        reasoning = parse_action(action, backend=cfg.backend, max_response_chars=cfg.max_response_chars,
                                 max_code_chars=cfg.max_code_chars).reasoning
        result = summarize_turn(self.summarizer, reasoning)
        self.summaries.append(result.source)
        self.errors.append(result.error)
        turn, last = len(self.played), len(self.played) == cfg.max_turns
        info = {"turn": turn, "score": self.played[-1], "feedback": f"feedback {turn}"}
        if last:
            info.update(scores=list(self.played), returns=aggregate(self.played, cfg.gamma, cfg.aggregation))
        reward = step_reward(self.played, last=last, gamma=cfg.gamma, mode=cfg.aggregation,
                             reward_mode=cfg.reward_mode)
        return f"turn {turn + 1} prompt", reward, False, last, info

    def close(self):
        self.closed = True


class Scripted(Policy):
    """Answers `answer <round>`; with `room` turns of conversation budget, `follow` ends an episode after them."""

    def __init__(self, room=None, lockstep=False, summaries=None):
        self.room, self.lockstep, self.summaries = room, lockstep, summaries
        self.asked, self.requests, self.followed = [], [], []

    async def answer(self, episodes):
        self.asked.append(len(episodes))
        return [f"I fuse the loads because round {len(self.asked)} is memory-bound." for _ in episodes]

    async def follow(self, episode):
        self.followed.append(episode.followup())
        return self.room is None or len(episode.infos) < self.room

    async def summarize(self, requests):
        self.requests.append(len(requests))
        if self.summaries is None:
            raise RuntimeError("the engine is down")
        return [self.summaries] * len(requests)


def started(env):
    episode = Episode(env)
    episode.reset(seed=0)
    return episode


@pytest.mark.parametrize("aggregation", ["sum", "max"])
def test_every_turn_returns_aggregate_of_the_scores(aggregation):
    scores = [[0.0, 1.3, 0.5], [1.0, 0.0, 0.2]]
    episodes = [started(ScriptedEnv(s, gamma=0.5, aggregation=aggregation)) for s in scores]
    policy = Scripted()
    asyncio.run(play(episodes, policy))
    assert policy.asked == [2, 2, 2]  # one batched answer per round for every episode still going
    for episode, s in zip(episodes, scores):
        assert episode.done and not episode.cut and episode.scores == s
        assert episode.returns() == aggregate(s, 0.5, aggregation)
        assert episode.reward() == pytest.approx(sum(s))  # reward_mode "score": the sum of the step rewards
        assert episode.observation == "turn 4 prompt" and len(episode.env_s) == 3
    assert len(policy.followed) == 4  # after each step but the last, for each episode: the user turn that follows
    assert policy.followed[0].startswith("Result of turn 1: feedback 1") and "Turn 2 of 3" in policy.followed[0]


def test_an_episode_cut_short_keeps_the_returns_of_its_turns():
    scores = [0.5, 1.0, 2.0]
    episode = started(ScriptedEnv(scores, gamma=0.4, reward_mode="return"))
    asyncio.run(play([episode], Scripted(room=2)))  # the conversation budget ends it after two turns
    assert episode.cut and not episode.done and episode.over and len(episode.infos) == 2
    assert episode.returns() == aggregate(scores[:2], 0.4, "sum")
    assert episode.rewards == [0.0, 0.0]  # "return" mode: R_1 only comes with the env's last step ...
    assert episode.reward() == pytest.approx(aggregate(scores[:2], 0.4, "sum")[0])  # ... so it is computed here
    full = started(ScriptedEnv(scores, gamma=0.4, reward_mode="return"))
    asyncio.run(play([full], Scripted()))
    assert full.reward() == pytest.approx(aggregate(scores, 0.4, "sum")[0]) == pytest.approx(sum(full.rewards))


def test_a_lockstep_policy_is_asked_every_round():
    policy = Scripted(lockstep=True)
    asyncio.run(play([started(ScriptedEnv([1.0]))], policy, rounds=3))
    assert policy.asked == [1, 0, 0]  # a collective generation: every rank calls it, with or without prompts
    alone = Scripted()
    asyncio.run(play([started(ScriptedEnv([1.0]))], alone, rounds=3))
    assert alone.asked == [1]


def test_policy_summaries_fill_each_envs_cache_before_its_step():
    envs = [ScriptedEnv([0.0, 0.0]), ScriptedEnv([0.0, 0.0])]
    policy = Scripted(summaries="SUMMARY: fused loads")
    asyncio.run(play([started(env) for env in envs], policy, summaries=True))
    assert policy.requests == [2, 2]  # one batched request per round
    assert all(env.summaries == ["policy", "policy"] for env in envs)
    down = ScriptedEnv([0.0])
    asyncio.run(play([started(down)], Scripted(), summaries=True))
    assert down.summaries == ["fallback"]  # the request failed: the step falls back and says so
    assert "RuntimeError: the engine is down" in down.errors[0]  # the real exception, not a generic line
    empty = ScriptedEnv([0.0])
    asyncio.run(play([started(empty)], Scripted(summaries="   "), summaries=True))
    assert empty.summaries == ["fallback"] and "empty summary" in empty.errors[0]


def test_every_trainer_logs_the_summary_fallbacks():
    """A turn whose summary fell back is counted in OpenRLHF's logs, verl's per-turn info, TRL's columns and the
    rollout metrics' rates (`summary_fallback`)."""
    from kernel_gym.integrations.openrlhf import turn_logs
    from kernel_gym.integrations.verl import turn_info
    from kernel_gym.metrics import Attempt, Trajectory, summarize

    info = {"turn": 1, "score": 0.0, "summary_source": "fallback", "task": "level1/relu", "correct": False}
    assert turn_logs(info)["kernel/summary_fallback"] == 1.0
    assert turn_logs({**info, "summary_source": "policy"})["kernel/summary_fallback"] == 0.0
    assert turn_info(info)["summary_fallback"] is True
    attempts = (Attempt.from_info(info), Attempt.from_info({**info, "turn": 2, "summary_source": "policy"}))
    metrics = summarize([Trajectory("level1/relu", "1x2", 0, attempts, turns=2)])
    assert metrics["1x2"].rates["summary_fallback"] == 0.5


def test_labels_and_settings():
    assert parse_label("level1/relu") == {"task": "level1/relu"}
    assert parse_label([{"role": "user", "content": '{"task": "level1/relu", "gamma": 1}'}]) == {
        "task": "level1/relu", "gamma": 1}
    settings, seed = episode_settings('{"task": "level1/relu", "max_turns": 2, "seed": "7"}',
                                      {"max_turns": 4, "device": "cpu"})
    assert settings == {"task": "level1/relu", "max_turns": 2, "device": "cpu"} and seed == 7
    with pytest.raises(ConfigError, match="a verl row"):
        episode_settings('{"max_turns": 2}', where="a verl row")
