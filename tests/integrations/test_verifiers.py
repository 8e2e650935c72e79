"""The verifiers adapter against verifiers 0.3.1 (its classic stack, `verifiers.legacy`): whole episodes through
verifiers' own runner (`Environment.generate`: its rollout loop, its OpenAI chat client, its rubric scoring),
generating from a local scripted OpenAI-compatible server (tests/conftest.py's `openai_server`)."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("verifiers.legacy", reason="verifiers 0.3 is not installed (pip install 'kernel-gym[verifiers]')")

from verifiers.legacy.types import ClientConfig  # noqa: E402

from kernel_gym.integrations import verifiers as adapter  # noqa: E402
from kernel_gym.rewards import aggregate  # noqa: E402

NO_CODE = "A fused kernel would help, but I forgot the code."


@pytest.fixture(autouse=True)
def use_evaluator(monkeypatch, evaluator):
    """Every env's shared evaluator is the session's warm CPU pool."""
    from kernel_gym.integrations import hub_episode

    monkeypatch.setattr(hub_episode, "shared_evaluator", lambda device, spec=None, workers=None: evaluator)


def generate(env, server, monkeypatch, **kwargs):
    monkeypatch.setenv("KERNEL_GYM_TEST_KEY", "not-a-secret")
    client = ClientConfig(api_base_url=server.url, api_key_var="KERNEL_GYM_TEST_KEY", max_retries=0)
    return asyncio.run(env.generate(env.get_dataset(), client=client, model="scripted",
                                    sampling_args={"temperature": 0.0}, state_columns=["kernel_gym"],
                                    on_progress=lambda *a, **k: None, **kwargs))


def gym_rewards(make_env, responses, **kwargs):
    env = make_env(**kwargs)
    env.reset(seed=0)
    return [env.step(text)[1] for text in responses]


@pytest.mark.timeout(600)
def test_a_whole_episode_through_verifiers_generate(openai_server, monkeypatch, make_env, respond, solution,
                                                   relu_code):
    """Three turns (no code, right, wrong) under a deterministic score: each step's score equals gym.make's, each
    step's reward is R_t, the rubric's reward is R_1."""
    responses = [NO_CODE, respond(solution("level1/relu")), respond(relu_code(body="x"))]
    openai_server.replies = list(responses)
    env = adapter.load_environment(tasks=["level1/relu"], max_turns=3,
                                   env_kwargs={"device": "cpu", "score": "correctness", "seed": 0})
    out = generate(env, openai_server, monkeypatch)
    (rollout,) = out["outputs"]
    assert rollout["error"] is None, rollout["error"]
    record = rollout["kernel_gym"]
    rewards = gym_rewards(make_env, responses, max_turns=3, score="correctness")
    assert record["scores"] == rewards == [0.0, 1.0, 0.0]
    returns = aggregate(rewards, 0.4, "sum")
    assert record["turn_rewards"] == pytest.approx(returns)  # turn t's reward on verifiers' trajectory: R_t
    assert record["returns"] == pytest.approx(returns) and record["complete"]
    assert rollout["reward"] == pytest.approx(returns[0])
    metrics = rollout["metrics"]
    assert metrics["kernel_score_sum"] == 1.0 and metrics["kernel_correct"] == 1.0 and metrics["kernel_turns"] == 3
    assert [t["error"] for t in record["turns"]] == ["format_error", "", "mismatch"]

    sent = [r["body"]["messages"] for r in openai_server.requests]
    assert len(sent) == 3  # one request per turn, the conversation growing by the feedback
    assert "ModelNew" in sent[0][-1]["content"] and sent[0][-1]["role"] == "user"
    assert sent[1][-1]["role"] == "user" and "Result of turn 1" in sent[1][-1]["content"]
    assert sent[2][-2]["role"] == "assistant" and len(sent[2]) == len(sent[1]) + 2


def test_observation_followup_and_a_row_label(openai_server, monkeypatch):
    openai_server.replies = [NO_CODE, NO_CODE]
    dataset = adapter.kernel_dataset(tasks=["level1/relu"], max_turns=2)
    assert json.loads(dataset[0]["info"]["kernel_gym"]) == {"task": "level1/relu", "max_turns": 2}
    env = adapter.KernelRefineMultiTurnEnv(dataset=dataset, env_kwargs={"device": "cpu", "max_turns": 5},
                                           followup="observation")
    (rollout,) = generate(env, openai_server, monkeypatch)["outputs"]
    assert rollout["kernel_gym"]["scores"] == [0.0, 0.0]  # the row's max_turns (2) wins over the env's (5)
    second = openai_server.requests[1]["body"]["messages"][-1]["content"]
    assert "latest attempt (turn 1)" in second and "Reasoning (summary): A fused kernel would help" in second
