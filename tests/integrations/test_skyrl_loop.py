"""A whole KernelRefine episode through SkyRL's own rollout code: `SkyRLGymGenerator.generate` (skyrl 0.4.0) runs it
in .venv-skyrl, a Python >= 3.12 environment made by scripts/skyrl_python.sh (`KERNEL_GYM_SKYRL=1 bash
scripts/install.sh`; CI sets it), through scripts/skyrl_episode.py: the generator's agent loop builds the env with
`skyrl_gym.make`, a scripted engine answers with three canned responses, and the env's evaluations go over HTTP to
`kernel-gym serve`'s app on this session's warm evaluator. The per-turn rewards SkyRL's generator hands its trainer
must be `gym.make`'s for the same responses, and its rollout metrics the episode's return.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from serving import served  # (tests/serving.py)

from kernel_gym.rewards import aggregate

NO_CODE = "A fused kernel would help, but I forgot the code."
HOW = "KERNEL_GYM_SKYRL=1 bash scripts/install.sh, or bash scripts/skyrl_python.sh after the install"


@pytest.fixture(scope="module")
def skyrl_python(repo_root):
    """.venv-skyrl's interpreter. Missing: a skip, or under KERNEL_GYM_REQUIRE_OPTIONAL=1 (CI, which installs it) a
    failure, as tests/conftest.py makes of a missing optional package."""
    python = repo_root / ".venv-skyrl" / "bin" / "python"
    if not python.exists():
        reason = f".venv-skyrl (Python >= 3.12 with skyrl 0.4.0) is missing: {HOW}"
        if os.environ.get("KERNEL_GYM_REQUIRE_OPTIONAL") == "1":
            pytest.fail(f"{reason} (KERNEL_GYM_REQUIRE_OPTIONAL=1 turns this skip into a failure)", pytrace=False)
        pytest.skip(reason)
    return python


@pytest.fixture(scope="module")
def served_evaluator(evaluator):
    """`kernel-gym serve`'s app over the session's evaluator, on a real uvicorn server (a thread), a free port."""
    pytest.importorskip("fastapi")
    from kernel_gym.service.app import create_app

    with served(create_app(evaluator)) as url:
        yield url


def skyrl_episode(python, repo_root, url, responses):
    """scripts/skyrl_episode.py under `python`: SkyRL's generator plays `responses`; its JSON result."""
    env = {**os.environ, "PYTHONPATH": str(repo_root)}
    env.pop("KERNEL_GYM_EVALUATOR", None)
    proc = subprocess.run([str(python), str(repo_root / "scripts" / "skyrl_episode.py"), url],
                          input=json.dumps(responses), capture_output=True, text=True, cwd=repo_root, env=env,
                          timeout=540)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(600)
def test_skyrls_generator_plays_an_episode_with_gym_makes_rewards(skyrl_python, served_evaluator, repo_root,
                                                                  make_env, respond, solution, relu_code):
    """No code (format error), the genuine ReLU (correct), a kernel that copies x (mismatch): a deterministic score,
    so SkyRL's per-turn rewards must equal gym.make's exactly."""
    responses = [NO_CODE, respond(solution("level1/relu")), respond(relu_code(body="x"))]
    skyrl = skyrl_episode(skyrl_python, repo_root, served_evaluator, responses)

    env = make_env(max_turns=3, score="correctness")
    env.reset(seed=0)
    scores = [env.step(text)[1] for text in responses]
    assert scores == [0.0, 1.0, 0.0]
    returns = aggregate(scores, env.unwrapped.config.gamma, env.unwrapped.config.aggregation)

    assert tuple(map(int, skyrl["python"].split(".")[:2])) >= (3, 12)
    # each turn's reward sits on its last token, what SkyRL's trainer discounts: gym.make's reward r_t = s_t
    assert skyrl["rewards"] == scores and skyrl["rewards_elsewhere"] == []
    assert skyrl["stop_reasons"] == ["stop"] and skyrl["sessions_finished"] == 1
    metrics = skyrl["rollout_metrics"]
    assert metrics["environment/kernel/return"] == pytest.approx(returns[0])  # R_1 = aggregate(scores)[0]
    assert metrics["environment/kernel/turns"] == 3 and metrics["environment/kernel/correct"] == 1.0
    # the env's prompt replaced the row's user turn, and each turn's feedback reached the model's next prompt
    prompts = skyrl["prompts"]
    assert len(prompts) == 3 and prompts[0].startswith("<|im_start|>system\nBe brief.") and "ModelNew" in prompts[0]
    assert "Result of turn 1" in prompts[1] and "Result of turn 2" in prompts[2]
