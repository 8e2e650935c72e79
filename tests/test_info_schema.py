"""docs/info.md is the whole `info` schema: a real step on the CPU backend produces exactly the documented keys."""

import re

import pytest


def documented(repo_root) -> dict[str, set[str]]:
    """{section heading: keys of its tables}: the backticked names in each table row's first cell."""
    text = (repo_root / "docs" / "info.md").read_text()
    sections: dict[str, set[str]] = {}
    heading = ""
    for line in text.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("| `") and heading:
            first = line.split("|")[1]
            sections.setdefault(heading, set()).update(re.findall(r"`([a-z_]+)`", first))
    return sections


def row(repo_root, key: str) -> str:
    return next(line for line in (repo_root / "docs" / "info.md").read_text().splitlines()
                if line.startswith(f"| `{key}`"))


@pytest.mark.timeout(300)
def test_a_real_episode_has_exactly_the_documented_keys(make_env, respond, solution, repo_root):
    doc = documented(repo_root)
    step_keys = doc["After every `step()`"]
    env = make_env(max_turns=2)
    _, reset_info = env.reset(seed=0)
    assert set(reset_info) == doc["After `reset()`"]
    _, _, _, _, first = env.step(respond(solution("level1/relu")))
    assert first["correct"], first["feedback"]
    assert set(first) == step_keys  # no optional key without its setting (ranker, judge, plan_code)
    _, _, _, _, last = env.step("no code here")
    assert set(last) == step_keys | doc["At the last step of an episode"]
    timing = row(repo_root, "timing")
    assert all(f"`{k}`" in timing for k in first["timing"])  # the timing dict's keys too
    stage = row(repo_root, "stage_ms")
    assert all(f"`{k}`" in stage for k in ("parse", "compile", "correctness", "timing", "step"))
    assert {"parse", "compile", "correctness", "timing", "step"} <= set(first["stage_ms"])


def test_optional_keys_and_the_contract_are_documented(repo_root):
    doc = documented(repo_root)
    assert doc["Only with some settings"] == {"plan_code", "ranker", "judge", "review_flags"}
    contract = {"turn", "task", "backend", "format_ok", "compiled", "correct", "speedup", "runtime_ms", "baseline_ms",
                "score", "hacks", "error", "feedback"}
    assert contract <= doc["After every `step()`"] and {"scores", "returns"} <= doc["At the last step of an episode"]


def test_plan_code_score_adds_its_key(make_env, respond, solution):
    env = make_env(max_turns=1, score="plan_code")
    env.reset(seed=0)
    _, _, _, _, info = env.step("no code here")
    assert "plan_code" in info and {"plan_spans", "code_spans", "plan_reward", "code_reward", "alpha"} <= set(
        info["plan_code"])
