"""The ranker term: a user's model as one more signal of the `linear` score; CudaPerf's two-stage recipe end to end
(log rollouts -> pairs -> a ranker fitted on them -> the ranker rewarding online)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from kernel_gym.errors import ConfigError, UnknownNameError
from kernel_gym.preference import RankerInput, load_ranker, pairs_from_logs, register_ranker
from kernel_gym.preference.candidates import Candidate

LINEAR_WITH_RANKER = {"name": "linear", "weights": {"correct": 0.3, "speedup": 1.0, "ranker": 0.5}}


def code_hash(code: str) -> str:
    return Candidate(task="", response="", code=code, prompt=None, correct=False).code_hash


def fit_win_rate_ranker(pairs):
    """The trivial 'training' stage: a kernel's score is its share of won pairs (0.5 for one never seen)."""
    wins, games = defaultdict(int), defaultdict(int)
    for p in pairs:
        winner, loser = p["evidence"]["chosen"]["code_sha256"], p["evidence"]["rejected"]["code_sha256"]
        wins[winner] += 1
        games[winner] += 1
        games[loser] += 1

    def ranker(candidate: RankerInput) -> float:
        h = code_hash(candidate.code)
        return wins[h] / games[h] if games[h] else 0.5

    return ranker


def test_two_stage_recipe_end_to_end(make_env, solution, respond, relu_code, tmp_path):
    # Stage 0: rollouts with a log (a genuine kernel, a wrong one, a response without code).
    env = make_env(max_turns=3, log_dir=str(tmp_path / "logs"))
    env.reset(seed=0)
    genuine = solution("level1/relu")
    for action in (respond(genuine), respond(relu_code(body="x")), "I would write a kernel."):
        env.step(action)
    env.close()
    # Stage 1: pairs from the log, and a ranker fitted on them.
    pairs = pairs_from_logs([tmp_path / "logs"])
    assert {p["rule"] for p in pairs} == {"correct>incorrect"} and len(pairs) == 2
    ranker = fit_win_rate_ranker(pairs)
    # Stage 2: the ranker rewards online as the linear score's `ranker` term.
    env = make_env(max_turns=2, score=LINEAR_WITH_RANKER, ranker=ranker)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(respond(genuine))
    assert info["correct"] and info["signals"]["ranker"] == 1.0
    assert info["ranker"] == {"score": 1.0, "mode": "pointwise", "note": ""}
    assert info["reward_terms"]["ranker"] == 1.0
    assert reward == pytest.approx(0.3 + info["speedup"] + 0.5 * 1.0)
    _, reward, _, _, info = env.step(respond(relu_code(body="x")))  # wrong: not rated, never paid
    assert "ranker" not in info["signals"] and info["ranker"]["score"] is None
    assert "only correct kernels" in info["ranker"]["note"] and reward == 0.0


def test_pairwise_ranker_from_a_dotted_path(make_env, solution, respond, tmp_path, monkeypatch):
    (tmp_path / "my_ranker.py").write_text(
        "seen = []\n"
        "def prefer(candidate, anchor):\n"
        "    seen.append(anchor.turn)\n"
        "    return 0.9 if anchor.turn == 0 else 1.7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    env = make_env(max_turns=2, score=LINEAR_WITH_RANKER, ranker="my_ranker:prefer")
    env.reset(seed=0)
    _, _, _, _, first = env.step(respond(solution("level1/relu")))
    _, _, _, _, second = env.step(respond(solution("level1/relu") + "\n# same kernel, again\n"))
    assert first["ranker"]["mode"] == "pairwise" and first["ranker"]["anchor"] == "reference"
    assert first["signals"]["ranker"] == 0.9
    assert second["ranker"]["anchor"] == "turn 1"  # the episode's best earlier correct kernel
    assert second["signals"]["ranker"] == 1.0 and "clipped" in second["ranker"]["note"]
    import my_ranker

    assert my_ranker.seen == [0, 1]


def test_a_failing_ranker_gives_no_signal_and_a_note(make_env, solution, respond):
    def broken(candidate):
        raise RuntimeError("model not loaded")

    env = make_env(max_turns=1, score=LINEAR_WITH_RANKER, ranker=broken)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(respond(solution("level1/relu")))
    assert info["correct"] and "ranker" not in info["signals"]
    assert info["ranker"]["score"] is None and "model not loaded" in info["ranker"]["note"]
    assert reward == pytest.approx(0.3 + info["speedup"])  # the missing term counts 0


def test_load_ranker_specs(tmp_path):
    @register_ranker("length")
    def by_length(candidate):
        return min(1.0, len(candidate.code) / 1000)

    assert load_ranker("length").fn is by_length and load_ranker("length").mode == "pointwise"
    assert load_ranker({"ranker": lambda a, b: 0.5}).mode == "pairwise"
    assert load_ranker({"ranker": lambda a, b=None: 0.5, "mode": "pairwise"}).mode == "pairwise"
    (tmp_path / "r.py").write_text("def score(c):\n    return 'high'\n")
    ranker = load_ranker(f"{tmp_path / 'r.py'}:score")
    assert ranker.rate(RankerInput(task="t", code="x")) == (None, "ranker returned 'high', not a finite number")
    with pytest.raises(UnknownNameError):
        load_ranker("lenght")
    with pytest.raises(ConfigError):
        load_ranker("no_such_module_xyz:f")
    with pytest.raises(ConfigError):
        load_ranker(42)
