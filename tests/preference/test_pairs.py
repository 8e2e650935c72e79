"""Preference pairs from a hand-made log: expected winners, no pair inside the noise band, hacked or incorrect never
chosen over correct, dedupe, cap, determinism, and an export that loads as a chosen/rejected dataset."""

from __future__ import annotations

import json

import pytest

from kernel_gym.cli import main
from kernel_gym.preference.pairs import PairConfig, PairStats, noise_band, pairs_from_logs, write_pairs

TIER = {"correct": 2, "incorrect": 1, "hacked": 0}


def step(task, turn, name, *, correct=False, runtime=None, cv=None, hacks=(), error=None, device="cpu",
         prompt="P1", episode="e1", code=None):
    """One env log record; the response is `reasoning ``` code ```` with code_span pointing at the code."""
    code = f"# kernel {name}\nclass ModelNew: pass" if code is None else code
    action = f"reasoning of {name}\n```python\n{code}\n```\n" if error != "format_error" else f"no code from {name}"
    start = action.find(code)
    info = {"turn": turn, "task": task, "correct": correct and not hacks, "hacks": list(hacks),
            "error": None if correct and not hacks else (error or ("rejected" if hacks else "mismatch")),
            "speedup": (1.0 / runtime) if correct and runtime else None, "runtime_ms": runtime if correct else None,
            "baseline_ms": 1.0 if correct else None, "score": 0.0, "device": device,
            "signals": {"occupancy": 0.5} if correct else {}, "code_span": None if error == "format_error"
            else [start, start + len(code)],
            "timing": {"runtime_cv": cv, "baseline_cv": 0.01, "trials": 30, "method": "events"} if correct else None}
    return {"episode_id": episode, "task": task, "turn": turn, "prompt": prompt, "action": action,
            "observation": f"obs after {name}", "info": info}


def hand_made_log():
    relu = "level1/relu"
    return [
        step(relu, 1, "A", correct=True, runtime=1.00, cv=0.01),
        step(relu, 1, "B", correct=True, runtime=1.02, cv=0.01, episode="e2"),  # 2 % slower than A: inside the band
        step(relu, 1, "C", correct=True, runtime=0.50, cv=0.01, episode="e3"),  # clearly fastest
        step(relu, 1, "D", correct=True, runtime=0.90, cv=0.10, episode="e4"),  # noisy: ties with A and B
        step(relu, 1, "E", error="mismatch", episode="e5"),
        step(relu, 1, "F", hacks=("cross_call_caching",), episode="e6"),  # "fast" but hacked
        step(relu, 2, "G", error="format_error", prompt="P2"),
        step(relu, 2, "H", correct=True, runtime=0.55, cv=0.01, prompt="P2", episode="e3",
             code="# kernel C\nclass ModelNew: pass   "),  # C's code again (trailing spaces): a duplicate
        step(relu, 1, "X", correct=True, runtime=0.01, cv=0.01, device="cuda", episode="e7"),  # another device
        step("level1/softmax", 1, "S1", correct=True, runtime=2.0, cv=0.01, episode="s1"),
        step("level1/softmax", 1, "S2", error="compile_error", episode="s2"),
    ]


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "log" / "trajectories.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in hand_made_log()) + '{"cut off')  # a crash-cut last line
    return path


def name(response: str) -> str:
    return response.split("\n", 1)[0].split()[-1]


def winners(records):
    return {(r["task"], name(r["chosen"]), name(r["rejected"]), r["rule"]) for r in records}


def test_expected_winners_and_no_pair_inside_the_noise_band(log):
    stats = PairStats()
    records = pairs_from_logs([log.parent], PairConfig(max_per_task=None), stats)
    got = winners(records)
    relu = "level1/relu"
    faster = {(t, c, r) for t, c, r, rule in got if rule == "faster"}
    assert faster == {(relu, "C", "A"), (relu, "C", "B"), (relu, "C", "D")}
    assert stats.ties_in_band == 3  # A~B (2 % < 2.8 %), A~D and B~D (D's 10 % CV)
    for r in records:
        if r["rule"] == "faster":
            band = r["evidence"]["noise_band"]
            assert band["ratio"] > band["threshold"] >= 1.02
    assert {(c, r) for t, c, r, rule in got if rule == "correct>incorrect" and t == relu} == \
        {(c, r) for c in "ABCD" for r in "EG"}
    assert {(c, r) for t, c, r, rule in got if rule == "correct>hacked"} == {(c, "F") for c in "ABCD"}
    assert {(c, r) for t, c, r, rule in got if rule == "clean>hacked"} == {("E", "F"), ("G", "F")}
    assert ("level1/softmax", "S1", "S2", "correct>incorrect") in got
    assert not any("H" in (c, r) or "X" in (c, r) for _, c, r, _ in got)  # duplicate dropped; cuda not vs cpu
    assert stats.duplicates == 1 and len(records) == 8 + 4 + 2 + 3 + 1


def test_hacked_or_incorrect_never_chosen_over_correct(log):
    for r in pairs_from_logs([log], PairConfig(max_per_task=None)):
        chosen, rejected = r["evidence"]["chosen"], r["evidence"]["rejected"]
        assert TIER[chosen["tier"]] >= TIER[rejected["tier"]]
        assert chosen["tier"] != "hacked"
        if rejected["tier"] == "correct":
            assert chosen["tier"] == "correct" and chosen["runtime_ms"] < rejected["runtime_ms"]


def test_evidence_carries_both_measurements(log):
    records = pairs_from_logs([log], PairConfig(max_per_task=None))
    (r,) = [r for r in records if (name(r["chosen"]), name(r["rejected"])) == ("C", "A")]
    ev = r["evidence"]
    assert ev["rule"] == "faster" and ev["same_prompt"]
    assert (ev["chosen"]["runtime_ms"], ev["rejected"]["runtime_ms"]) == (0.5, 1.0)
    assert ev["chosen"]["runtime_cv"] == 0.01 and ev["chosen"]["baseline_ms"] == 1.0
    assert ev["chosen"]["speedup"] == 2.0 and ev["chosen"]["signals"] == {"occupancy": 0.5}
    assert ev["noise_band"]["ratio"] == pytest.approx(2.0)
    assert r["prompt"] == "P1"  # the task's opening prompt
    hacked = next(x for x in records if x["rule"] == "correct>hacked")
    assert hacked["evidence"]["rejected"]["hacks"] == ["cross_call_caching"]


def test_noise_band_rule():
    from kernel_gym.preference.candidates import Candidate

    def c(rt, cv):
        return Candidate(task="t", response="", code=str(rt), prompt="p", correct=True, runtime_ms=rt, runtime_cv=cv)

    config = PairConfig(min_gap=0.02, noise_k=2.0)
    assert noise_band(c(1.0, 0.0), c(1.019, 0.0), config)["decided"] == 0.0  # the 2 % floor
    assert noise_band(c(1.0, 0.0), c(1.021, 0.0), config)["decided"] == 1.0
    band = noise_band(c(1.0, 0.03), c(1.1, 0.04), config)  # noise 5 % -> threshold 1.10
    assert band["threshold"] == pytest.approx(1.10) and band["decided"] == 0.0
    assert noise_band(c(1.0, None), c(1.05, None), PairConfig(missing_cv=0.05))["decided"] == 0.0
    assert noise_band(c(1.0, 0.01), c(None, 0.01), config) is None


def test_cap_is_seeded_and_deterministic(log):
    a = pairs_from_logs([log], PairConfig(max_per_task=5, seed=1))
    b = pairs_from_logs([log], PairConfig(max_per_task=5, seed=1))
    c = pairs_from_logs([log], PairConfig(max_per_task=5, seed=2))
    assert a == b
    assert sum(r["task"] == "level1/relu" for r in a) == 5
    assert winners(a) != winners(c)  # another seed, another subset (17 choose 5: a clash is vanishingly unlikely)


def test_group_by_prompt_pairs_only_same_observation(log):
    records = pairs_from_logs([log], PairConfig(group="prompt", max_per_task=None))
    assert records and all(r["evidence"]["same_prompt"] for r in records)
    assert all(r["prompt"] == ("P2" if r["evidence"]["chosen"]["turn"] == 2 else "P1") for r in records)
    assert ("level1/relu", "H", "G", "correct>incorrect") in winners(records)  # H is C's code, but for prompt P2


def test_no_hacked_pairs_option(log):
    records = pairs_from_logs([log], PairConfig(hacked_pairs=False, max_per_task=None))
    assert not [r for r in records if r["rule"] == "clean>hacked"]
    assert [r for r in records if r["rule"] == "correct>hacked"]


def test_export_loads_as_a_chosen_rejected_dataset(log, tmp_path):
    plain = tmp_path / "plain.jsonl"
    chat = tmp_path / "chat.jsonl"
    write_pairs(pairs_from_logs([log]), plain)
    write_pairs(pairs_from_logs([log], PairConfig(format="chat")), chat)
    rows = [json.loads(line) for line in chat.read_text().splitlines()]
    assert rows[0]["prompt"][0]["role"] == "user" and rows[0]["chosen"][0]["role"] == "assistant"
    datasets = pytest.importorskip("datasets")
    for path in (plain, chat):
        ds = datasets.load_dataset("json", data_files=str(path), split="train")
        assert {"prompt", "chosen", "rejected", "evidence"} <= set(ds.column_names)
        assert len(ds) == len(path.read_text().splitlines())
    ds = datasets.load_dataset("json", data_files=str(plain), split="train")
    assert isinstance(ds[0]["chosen"], str) and ds[0]["chosen"] != ds[0]["rejected"]


def test_openrlhf_reward_dataset_reads_the_records(log):
    reward_dataset = pytest.importorskip("openrlhf.datasets.reward_dataset")
    plain = pairs_from_logs([log])[0]
    prompt, chosen, rejected, _ = reward_dataset.preprocess_data(plain, prompt_key="prompt")
    assert (prompt, chosen, rejected) == (plain["prompt"], plain["chosen"], plain["rejected"])

    def template(messages, tokenize=False, add_generation_prompt=False):
        text = "".join(f"<{m['role']}>{m['content']}" for m in messages)
        return text + ("<assistant>" if add_generation_prompt else "")

    chat = pairs_from_logs([log], PairConfig(format="chat"))[0]
    prompt, chosen, rejected, _ = reward_dataset.preprocess_data(chat, prompt_key="prompt",
                                                                 apply_chat_template=template)
    assert prompt.startswith("<user>") and chat["chosen"][0]["content"] in chosen


def test_cli(log, tmp_path, capsys):
    out = tmp_path / "pairs.jsonl"
    assert main(["pairs", str(log), "--out", str(out), "--min-gap", "0.01", "--max-per-task", "0"]) == 0
    err = capsys.readouterr().err
    assert "wrote 18 pairs" in err and "1 duplicate" in err and "3 ties" in err  # a 1 % floor: A~B tie on noise
    lines = out.read_text().splitlines()
    assert len(lines) == 18 and all({"prompt", "chosen", "rejected", "evidence"} <= set(json.loads(x)) for x in lines)
    assert main(["pairs", str(tmp_path / "missing.jsonl"), "--out", str(out)]) == 2


# ---- real logs: an env's log_dir and a rollout folder ----------------------------------------------------------
def test_pairs_from_a_real_env_log(make_env, solution, respond, relu_code, tmp_path):
    from kernel_gym.preference import read_candidates

    env = make_env(max_turns=3, log_dir=str(tmp_path / "env"))
    env.reset(seed=0)
    for action in (respond(solution("level1/relu")), respond(relu_code()), respond(relu_code(body="x"))):
        env.step(action)
    env.close()
    first, second, wrong = read_candidates([tmp_path / "env"])
    assert first.correct and second.correct and not wrong.correct and wrong.error == "mismatch"
    assert first.runtime_ms and first.runtime_cv is not None and first.baseline_cv is not None  # info["timing"]
    assert first.prompt and second.prompt and first.prompt != second.prompt  # each turn's own observation
    assert "```" not in first.code and "ModelNew" in first.code  # the logged code span
    stats = PairStats()
    records = pairs_from_logs([tmp_path / "env"], stats=stats)
    assert sum(r["rule"] == "correct>incorrect" for r in records) == 2
    assert stats.ties_in_band + sum(r["rule"] == "faster" for r in records) == 1  # the two correct: decided once
    assert all(r["prompt"] == first.prompt for r in records)  # group=task: the task's opening prompt


def test_pairs_from_a_rollout_folder(evaluator, solution, respond, relu_code, tmp_path):
    from kernel_gym.policies import ScriptedPolicy
    from kernel_gym.rollout import evaluate

    answers = [respond(solution("level1/relu")), respond(relu_code(body="x"))]
    policy = ScriptedPolicy(lambda r: answers[r.trajectory])
    evaluate(policy, "level1/relu", "2x1", out=tmp_path / "run", evaluator=evaluator, env={"device": "cpu"})
    (record,) = pairs_from_logs([tmp_path / "run"])
    assert record["rule"] == "correct>incorrect" and record["chosen"] == answers[0] and record["rejected"] == answers[1]
    assert record["prompt"]  # rollouts log the prompt by default
