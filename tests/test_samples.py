"""Per-turn training samples from a real CPU episode's trajectory log (one env, one 2-turn episode)."""

import json

import gymnasium as gym
import pytest

import kernel_gym  # noqa: F401 - registers KernelRefine-v0
from kernel_gym.cli import main
from kernel_gym.rewards import aggregate
from kernel_gym.samples import episodes, samples_from_logs
from kernel_gym.trajectory import read_log


@pytest.fixture(scope="module")
def episode(evaluator, solution, tmp_path_factory):
    """A genuine ReLU on turn 1, a response without code on turn 2; returns what the agent saw and got."""
    log_dir = tmp_path_factory.mktemp("logs")
    env = gym.make("KernelRefine-v0", task="level1/relu", device="cpu", max_turns=2, log_dir=str(log_dir),
                   evaluator=evaluator)
    try:
        obs0, _ = env.reset(seed=0)
        actions = [f"One pass, memory-bound.\n```python\n{solution('level1/relu')}```\n",
                   "I am out of ideas, no code this time."]
        steps = [env.step(a) for a in actions]
    finally:
        env.close()
    (log,) = log_dir.glob("*.jsonl")
    return {"dir": log_dir, "log": log, "prompts": [obs0, steps[0][0]], "actions": actions,
            "infos": [s[4] for s in steps], "rewards": [s[1] for s in steps]}


def test_the_log_records_the_prompt_each_turn_saw(episode):
    records = read_log(episode["log"])
    assert [r["prompt"] for r in records] == episode["prompts"]
    assert "latest attempt" not in records[0]["prompt"]  # turn 1 saw the bare reset prompt
    assert "Feedback on your latest attempt (turn 1)" in records[1]["prompt"]
    assert [(r["gamma"], r["aggregation"]) for r in records] == [(0.4, "sum")] * 2
    assert [r["reward"] for r in records] == episode["rewards"]


def test_one_sample_per_turn(episode):
    infos = episode["infos"]
    assert infos[0]["correct"] and infos[1]["error"] == "format_error"
    samples = samples_from_logs([episode["log"]])
    assert [s["turn"] for s in samples] == [1, 2]
    for sample, prompt, action, info in zip(samples, episode["prompts"], episode["actions"], infos):
        assert (sample["prompt"], sample["response"]) == (prompt, action)
        assert sample["score"] == info["score"] and sample["hacks"] == info["hacks"] == []
        assert sample["task"] == "level1/relu" and sample["episode_id"] == info["episode_id"]
        assert sample["episode_complete"] is True and sample["episode_turns"] == 2
    assert [s["return"] for s in samples] == infos[1]["returns"]
    s1 = infos[0]["score"]
    assert samples[0]["return"] == pytest.approx(s1, abs=1e-12) and samples[1]["return"] == 0.0
    assert samples[0]["speedup"] == infos[0]["speedup"] and samples[1]["error"] == "format_error"
    json.dumps(samples)


def test_returns_recomputed_with_another_gamma_and_mode(episode):
    s1 = episode["infos"][0]["score"]
    scores = [s1, 0.0]
    for gamma, mode in ((1.0, "sum"), (0.0, "max"), (0.8, "max")):
        samples = samples_from_logs([episode["dir"]], gamma=gamma, mode=mode)
        assert [s["return"] for s in samples] == aggregate(scores, gamma, mode)
        assert {(s["gamma"], s["aggregation"]) for s in samples} == {(gamma, mode)}


def test_chat_format(episode):
    samples = samples_from_logs([episode["log"]], chat=True)
    assert "prompt" not in samples[0] and "response" not in samples[0]
    assert samples[1]["messages"] == [{"role": "user", "content": episode["prompts"][1]},
                                      {"role": "assistant", "content": episode["actions"][1]}]


def test_an_incomplete_episode_still_yields_its_turns(episode, tmp_path):
    first = episode["log"].read_text().splitlines()[0]
    cut = tmp_path / "killed.jsonl"
    cut.write_text(first + "\n" + '{"episode_id": "x", "turn": 2, "info": {"sco')  # a line cut off by a kill
    (ep,) = episodes([cut])
    assert not ep.complete
    (sample,) = samples_from_logs([cut])
    assert sample["episode_complete"] is False and sample["episode_turns"] == 1
    assert sample["return"] == episode["infos"][0]["score"]  # R_1 over the turns present: s_1 alone


def test_an_older_log_without_prompts_uses_the_previous_observation(episode, tmp_path):
    records = read_log(episode["log"])
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "prompt"}) + "\n" for r in records))
    (sample,) = samples_from_logs([old])  # turn 1's prompt is unknown: skipped
    assert sample["turn"] == 2 and sample["prompt"] == records[0]["observation"] == episode["prompts"][1]


def test_cli_samples(episode, tmp_path, capsys):
    out = tmp_path / "samples.jsonl"
    assert main(["samples", str(episode["dir"]), "--out", str(out), "--chat", "--gamma", "1.0", "--mode", "sum"]) == 0
    assert "wrote 2 samples from 1 episodes (0 incomplete)" in capsys.readouterr().out
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [s["turn"] for s in lines] == [1, 2] and lines[0]["messages"][0]["content"] == episode["prompts"][0]
    assert lines[0]["return"] == pytest.approx(episode["infos"][0]["score"], abs=1e-12)
    plain = tmp_path / "plain.jsonl"
    assert main(["samples", str(episode["log"]), "--out", str(plain)]) == 0
    assert json.loads(plain.read_text().splitlines()[1])["response"] == episode["actions"][1]
    assert main(["samples", str(tmp_path / "missing.jsonl"), "--out", str(plain)]) == 2
