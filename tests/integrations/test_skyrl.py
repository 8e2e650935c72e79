"""The SkyRL adapter against skyrl-gym 0.4.0: the env is made by skyrl_gym's own registry (`skyrl_gym.make`) with
the config section and row extras SkyRL's generator hands it, and played the way `SkyRLGymGenerator.agent_loop`
plays an env (init with the row's prompt, step per response until done, metrics, close), in this interpreter. The
generator itself (package `skyrl` 0.4.0) needs Python >= 3.12 (its pydantic models use `typing.TypedDict`): it runs
the whole episode in test_skyrl_loop.py, in .venv-skyrl (scripts/skyrl_python.sh).
"""

from __future__ import annotations

import pytest

pytest.importorskip("skyrl_gym", reason="skyrl-gym is not installed (pip install 'kernel-gym[skyrl]')")

import skyrl_gym  # noqa: E402

from kernel_gym.errors import ConfigError  # noqa: E402
from kernel_gym.integrations import skyrl as adapter  # noqa: E402
from kernel_gym.rewards import aggregate  # noqa: E402

NO_CODE = "A fused kernel would help, but I forgot the code."


@pytest.fixture(autouse=True)
def use_evaluator(monkeypatch, evaluator):
    """Every env's shared evaluator is the session's warm CPU pool."""
    from kernel_gym.integrations import hub_episode

    monkeypatch.setattr(hub_episode, "shared_evaluator", lambda device, spec=None, workers=None: evaluator)


def play(env, prompt, responses):
    """The env's side of SkyRL's agent loop: (first prompt, step outputs)."""
    first, _ = env.init(prompt)
    outputs = []
    for text in responses:
        out = env.step(text)
        outputs.append(out)
        if out["done"]:
            break
    return first, outputs


def gym_rewards(make_env, responses, **kwargs):
    env = make_env(**kwargs)
    env.reset(seed=0)
    rewards, info = [], {}
    for text in responses:
        _, reward, _, truncated, info = env.step(text)
        rewards.append(reward)
        if truncated:
            break
    return rewards, info


@pytest.mark.timeout(600)
def test_a_whole_episode_through_skyrl_gym_gives_gym_makes_rewards(make_env, respond, solution, relu_code):
    """A deterministic score (correctness), so the two episodes' rewards must agree exactly."""
    responses = [NO_CODE, respond(solution("level1/relu")), respond(relu_code(body="x"))]  # no code, right, wrong
    env = skyrl_gym.make(adapter.ENV_ID, env_config={"env": {"device": "cpu", "score": "correctness"}},
                         extras={"extra_info": {"kernel_gym": {"task": "level1/relu", "seed": 0}},
                                 "max_turns": 3})
    assert isinstance(env, adapter.KernelGymTextEnv) and env.max_turns == 3
    try:
        first, outputs = play(env, [{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": "placeholder"}], responses)
        metrics = env.get_metrics()
    finally:
        env.close()
    assert first[0] == {"role": "system", "content": "Be brief."} and "ModelNew" in first[1]["content"]
    assert [o["done"] for o in outputs] == [False, False, True]
    assert outputs[0]["observations"][0]["role"] == "user" and "Result of turn 1" in outputs[0]["observations"][0][
        "content"]
    assert outputs[2]["observations"] == []

    rewards, info = gym_rewards(make_env, responses, max_turns=3, score="correctness")
    scores = [o["reward"] for o in outputs]
    assert scores == rewards == [0.0, 1.0, 0.0], info["feedback"]
    last = outputs[-1]["metadata"]
    assert last["scores"] == pytest.approx(rewards)
    for t, ret in enumerate(aggregate(rewards, 0.4, "sum")):
        assert last["returns"][t] == pytest.approx(ret)  # turn t's return R_t
    assert last["kernel_gym"]["error"] == "mismatch" and last["kernel_gym"]["turn"] == 3
    assert metrics["kernel/return"] == pytest.approx(0.4) and metrics["kernel/best_score"] == 1.0
    assert metrics["kernel/turns"] == 3 and metrics["kernel/correct"] == 1.0
    assert adapter.KernelGymTextEnv.aggregate_metrics([metrics, metrics])["kernel/turns"] == 3


def test_observation_followup_shows_the_envs_summarized_history():
    env = skyrl_gym.make(adapter.ENV_ID, env_config={"env": {"device": "cpu", "max_turns": 3},
                                                      "followup": "observation"},
                         extras={"extra_info": {"kernel_gym": "level1/relu"}})
    try:
        env.init([])
        out = env.step(NO_CODE)
    finally:
        env.close()
    message = out["observations"][0]["content"]
    assert env.max_turns == 3 and not out["done"] and out["reward"] == 0.0
    assert "ModelNew" in message and "latest attempt (turn 1)" in message  # the task again, with turn 1 summarized
    assert "Reasoning (summary): A fused kernel would help" in message


def test_a_row_without_a_label_is_refused():
    with pytest.raises(ConfigError, match="kernel_gym"):
        skyrl_gym.make(adapter.ENV_ID, env_config={}, extras={"extra_info": {}})
