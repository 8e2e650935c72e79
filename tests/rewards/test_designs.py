"""Every reward design, checked with exact numbers on hand-made TurnSignals; presets; reward_mode in a real env."""

import math

import gymnasium as gym
import pytest

import kernel_gym  # noqa: F401 - registers KernelRefine-v0
from kernel_gym.config import list_presets, make_config
from kernel_gym.errors import ConfigError, UnknownScoreError
from kernel_gym.eval.result import EvalResult, Outcome, Timing
from kernel_gym.rewards import (
    TurnSignals,
    aggregate,
    get_score,
    length_shaped,
    linear_score,
    list_scores,
    plan_code_info,
    score_terms,
    step_reward,
    task_difficulty,
)
from kernel_gym.rewards.plan_code import char_spans, token_spans


def sig(correct=True, speedup=None, *, format_ok=True, compiled=True, hacks=(), chars=0, plan=0, code=0,
        difficulty=1.0, signals=None):
    return TurnSignals(format_ok=format_ok, compiled=compiled, correct=correct, speedup=speedup, hacks=tuple(hacks),
                       response_chars=chars, signals=dict(signals or {}), plan_chars=plan, code_chars=code,
                       difficulty=difficulty)


FAILED_FORMAT = sig(False, None, format_ok=False, compiled=False)
FAILED_COMPILE = sig(False, None, compiled=False)
MISMATCH = sig(False, None)


# ---- registry and parameters ----------------------------------------------------------------------------------
def test_every_design_is_registered():
    assert {"kevin", "correctness", "linear", "milestone", "tritonrl", "plan_code", "length_shaped"} <= set(list_scores())


@pytest.mark.parametrize("name", ["kevin", "correctness", "linear", "milestone", "tritonrl", "plan_code", "length_shaped"])
def test_docstring_states_a_formula(name):
    assert get_score(name).__doc__.startswith("S = ")


@pytest.mark.parametrize("name", ["kevin", "correctness", "linear", "milestone", "tritonrl", "plan_code", "length_shaped"])
def test_any_hack_zeroes_every_score(name):
    score = get_score(name)
    assert score(sig(True, 1.8)) > 0
    assert score(sig(True, 1.8, hacks=["decoy_kernel"])) == 0.0
    assert score(sig(False, None, hacks=["library_op"], chars=50_000, difficulty=3)) == 0.0


def test_kevin_weight_from_a_dict_spec():
    assert get_score({"name": "kevin", "correctness_weight": 0.5})(sig(True, 2.0)) == 2.5
    assert get_score({"name": "kevin", "correctness_weight": 1.0})(sig(True, 0.25)) == 1.25
    assert get_score({"name": "kevin"}) is get_score("kevin")


def test_dict_spec_errors():
    with pytest.raises(ConfigError, match="'name'"):
        get_score({"correctness_weight": 0.5})
    with pytest.raises(ConfigError, match="accepts \\['correctness_weight'\\]"):
        get_score({"name": "kevin", "weight": 0.5})
    with pytest.raises(ConfigError, match="takes no parameters"):
        get_score({"name": "correctness", "x": 1})
    with pytest.raises(UnknownScoreError, match="Did you mean 'milestone'"):
        get_score({"name": "milestones"})
    with pytest.raises(ConfigError):
        get_score(3)


def test_a_plain_callable_has_no_terms():
    assert score_terms(lambda t: 1.0, sig()) == {}


# ---- kevin ------------------------------------------------------------------------------------------------------
def test_kevin_terms():
    kevin = get_score("kevin")
    assert kevin(sig(True, 1.5)) == pytest.approx(1.8, abs=1e-12)
    assert score_terms(kevin, sig(True, 1.5)) == {"correct": 1.0, "speedup": 1.5}
    assert score_terms(kevin, MISMATCH) == {"correct": 0.0, "speedup": 0.0}


# ---- linear -----------------------------------------------------------------------------------------------------
def test_linear_default_is_kevin():
    linear, kevin = get_score("linear"), get_score("kevin")
    for t in (sig(True, 2.0), sig(True, 0.5), MISMATCH, FAILED_COMPILE, FAILED_FORMAT):
        assert linear(t) == pytest.approx(kevin(t), abs=1e-12)


def test_linear_weighted_sum_and_terms():
    score = linear_score({"correct": 1.0, "compiled": 0.2, "format_ok": 0.1, "speedup": 0.5, "occupancy": 2.0,
                          "coalescing": 0.0})
    t = sig(True, 3.0, signals={"occupancy": 0.25, "coalescing": 0.9})
    # 1 + 0.2 + 0.1 + 0.5*3 + 2*0.25 + 0*0.9 = 3.3
    assert score(t) == pytest.approx(3.3, abs=1e-12)
    assert score_terms(score, t) == {"correct": 1.0, "compiled": 1.0, "format_ok": 1.0, "speedup": 3.0,
                                     "occupancy": 0.25, "coalescing": 0.9}  # the weight-0 term is logged
    # compiled but wrong: 0.2 + 0.1 + 2*0.25; a signal the backend did not measure counts 0
    assert score(sig(False, None, signals={"occupancy": 0.25})) == pytest.approx(0.8, abs=1e-12)
    assert score(sig(False, None)) == pytest.approx(0.3, abs=1e-12)
    assert score_terms(score, FAILED_FORMAT)["occupancy"] == 0.0


def test_linear_reads_length_and_difficulty_fields():
    score = linear_score({"correct": 1.0, "plan_chars": -0.001, "difficulty": 0.5})
    assert score(sig(True, 1.0, plan=300, difficulty=2)) == pytest.approx(1.0 - 0.3 + 1.0, abs=1e-12)


def test_linear_from_a_dict_and_bad_weights():
    assert get_score({"name": "linear", "weights": {"correct": 2.0}})(sig(True, 5.0)) == 2.0
    with pytest.raises(ConfigError, match="at least one"):
        linear_score({})
    with pytest.raises(ConfigError, match="must be a number"):
        linear_score({"correct": "1"})


# ---- milestone --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("t", "expected"), [(FAILED_FORMAT, 0.0), (FAILED_COMPILE, 0.0), (MISMATCH, 0.0),
                                              (sig(True, 0.3), 1.0), (sig(True, 1.0), 1.0), (sig(True, None), 1.0),
                                              (sig(True, 1.0001), 2.0), (sig(True, 40.0), 2.0)])
def test_milestone(t, expected):
    assert get_score("milestone")(t) == expected


def test_milestone_terms_and_threshold():
    assert score_terms(get_score("milestone"), sig(True, 1.5)) == {"correct": 1.0, "faster": 1.0}
    assert get_score({"name": "milestone", "faster_than": 2.0})(sig(True, 1.5)) == 1.0


# ---- tritonrl ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("t", "terms", "expected"), [
    (sig(True, 3.0), {"syntax": 1, "func": 1, "valid": 1, "R_correct": 1, "R_speedup": 2.0}, 3.0),  # clipped at 2
    (sig(True, 0.5), {"syntax": 1, "func": 1, "valid": 1, "R_correct": 1, "R_speedup": 0.5}, 1.5),
    (MISMATCH, {"syntax": 1, "func": 1, "valid": 1, "R_correct": 0, "R_speedup": 0.0}, 0.0),
    (FAILED_COMPILE, {"syntax": 0, "func": 1, "valid": 0, "R_correct": 0, "R_speedup": 0.0}, 0.0),
    (FAILED_FORMAT, {"syntax": 0, "func": 1, "valid": 0, "R_correct": 0, "R_speedup": 0.0}, 0.0),
    (sig(True, 1.7, hacks=["side_stream"]), {"syntax": 1, "func": 0, "valid": 0, "R_correct": 0, "R_speedup": 0.0}, 0.0),
])
def test_tritonrl(t, terms, expected):
    score = get_score("tritonrl")
    assert score(t) == pytest.approx(expected, abs=1e-12)
    assert score_terms(score, t) == pytest.approx(terms, abs=1e-12)


def test_tritonrl_weights():
    score = get_score({"name": "tritonrl", "correct_weight": 0.5, "speedup_weight": 2.0, "max_speedup": 4.0})
    assert score(sig(True, 3.0)) == pytest.approx(0.5 + 6.0, abs=1e-12)


# ---- plan_code --------------------------------------------------------------------------------------------------
def test_plan_code_score():
    score = get_score("plan_code")
    assert score(sig(True, 1.5)) == pytest.approx(0.1 * 1.5 + 1.0, abs=1e-12)
    assert score(sig(True, 9.0)) == pytest.approx(0.1 * 2.0 + 1.0, abs=1e-12)
    assert score(MISMATCH) == 0.0
    assert get_score({"name": "plan_code", "alpha": 0.5})(sig(True, 1.5)) == pytest.approx(1.75, abs=1e-12)
    terms = score_terms(score, sig(True, 1.5))
    assert (terms["plan_reward"], terms["code_reward"]) == (1.5, 1.0)


def test_char_spans_partition_the_response():
    assert char_spans(100, (20, 80)) == ([[0, 20], [80, 100]], [[20, 80]])
    assert char_spans(80, (20, 80)) == ([[0, 20]], [[20, 80]])
    assert char_spans(50, None) == ([[0, 50]], [])
    assert char_spans(0, None) == ([], [])


class FakeTokenizer:
    """The one call plan_code_info makes of a Hugging Face fast tokenizer: whitespace-separated words."""

    def __call__(self, text, return_offsets_mapping=False, add_special_tokens=True):
        assert return_offsets_mapping and not add_special_tokens
        offsets, pos = [], 0
        for word in text.split():
            start = text.index(word, pos)
            offsets.append((start, start + len(word)))
            pos = start + len(word)
        return {"input_ids": list(range(len(offsets))), "offset_mapping": offsets}


class SlowTokenizer:
    def __call__(self, text, **kwargs):
        raise NotImplementedError("return_offset_mapping is not available when using Python tokenizers")


RESPONSE = "Plan: fuse it.\n```python\nclass ModelNew: pass\n```\nDone."
CODE_SPAN = (RESPONSE.index("class"), RESPONSE.index("```\nDone"))


def test_token_spans():
    # tokens: Plan: fuse it. ```python | class ModelNew: pass | ``` Done.
    offsets = FakeTokenizer()(RESPONSE, return_offsets_mapping=True, add_special_tokens=False)["offset_mapping"]
    assert token_spans(offsets, [list(CODE_SPAN)]) == ([[0, 4], [7, 9]], [[4, 7]])


def test_plan_code_info_with_a_tokenizer():
    score = get_score("plan_code")
    info = plan_code_info(score, sig(True, 1.5), RESPONSE, CODE_SPAN, FakeTokenizer())
    assert info == {"plan_spans": [[0, CODE_SPAN[0]], [CODE_SPAN[1], len(RESPONSE)]], "code_spans": [list(CODE_SPAN)],
                    "plan_reward": 1.5, "code_reward": 1.0, "alpha": 0.1, "plan_token_spans": [[0, 4], [7, 9]],
                    "code_token_spans": [[4, 7]], "num_tokens": 9}
    assert RESPONSE[slice(*info["code_spans"][0])] == "class ModelNew: pass\n"


def test_plan_code_info_without_offsets_says_so():
    info = plan_code_info(get_score("plan_code"), MISMATCH, RESPONSE, CODE_SPAN, SlowTokenizer())
    assert "plan_token_spans" not in info and info["token_error"].startswith("NotImplementedError")
    assert (info["plan_reward"], info["code_reward"]) == (0.0, 0.0)


def test_plan_code_info_only_for_plan_code_scores():
    assert plan_code_info(get_score("tritonrl"), sig(True, 1.5), RESPONSE, CODE_SPAN) is None
    hacked = plan_code_info(get_score("plan_code"), sig(True, 1.5, hacks=["x"]), RESPONSE, CODE_SPAN)
    assert (hacked["plan_reward"], hacked["code_reward"]) == (0.0, 0.0)


# ---- length_shaped ----------------------------------------------------------------------------------------------
def test_length_shaped_exact():
    score = length_shaped("kevin", lam=0.05, ref_chars=4000, shape="sqrt")
    # kevin 0.3 + 1.0 = 1.3; penalty 0.05 * 2 * sqrt(16000 / 4000) = 0.2
    assert score(sig(True, 1.0, chars=16_000, difficulty=2)) == pytest.approx(1.1, abs=1e-12)
    assert score_terms(score, sig(True, 1.0, chars=16_000, difficulty=2)) == pytest.approx(
        {"correct": 1.0, "speedup": 1.0, "base": 1.3, "length_penalty": 0.2}, abs=1e-12)
    log_score = length_shaped("kevin", lam=0.1, ref_chars=1000, shape="log1p")
    assert log_score(sig(True, 1.0, chars=1000)) == pytest.approx(1.3 - 0.1 * math.log1p(1.0), abs=1e-12)
    assert score(sig(True, 1.0, chars=0)) == pytest.approx(1.3, abs=1e-12)


def test_length_shaped_is_concave():
    score = length_shaped("correctness", lam=0.1, ref_chars=1000)
    cost = [1.0 - score(sig(True, 1.0, chars=n)) for n in (1000, 2000, 3000)]
    assert cost[1] - cost[0] > cost[2] - cost[1] > 0


def test_length_shaped_never_below_zero_for_a_correct_answer_and_leaves_failures_alone():
    score = length_shaped("kevin", lam=1.0, ref_chars=100)
    assert score(sig(True, 0.1, chars=1_000_000, difficulty=3)) == 0.0
    assert score(MISMATCH) == 0.0
    assert score(sig(False, None, chars=1_000_000)) == 0.0
    negative = length_shaped(lambda t: -1.0, lam=1.0, ref_chars=100)
    assert negative(sig(True, 1.0, chars=10_000)) == -1.0


def test_length_shaped_difficulty_power():
    harder_thinks_longer = length_shaped("correctness", lam=0.1, ref_chars=100, difficulty_power=-1.0)
    assert harder_thinks_longer(sig(True, 1.0, chars=400, difficulty=2)) == pytest.approx(1.0 - 0.1 * 2 / 2, abs=1e-12)
    assert harder_thinks_longer(sig(True, 1.0, chars=400, difficulty=0)) == 1.0


def test_length_shaped_composes_from_a_dict():
    score = get_score({"name": "length_shaped", "base": {"name": "milestone"}, "lam": 0.25, "ref_chars": 100})
    assert score(sig(True, 1.5, chars=400, difficulty=1)) == pytest.approx(2.0 - 0.5, abs=1e-12)
    with pytest.raises(ConfigError, match="shape"):
        length_shaped(shape="cube")


def test_task_difficulty():
    assert task_difficulty({"difficulty": 2.5}, 1) == 2.5
    assert task_difficulty({}, 2) == 2.0
    assert task_difficulty({}, None) == 1.0


# ---- aggregation and step rewards -----------------------------------------------------------------------------
@pytest.mark.parametrize(("scores", "gamma", "mode", "returns"), [
    ([1.0, 2.0, 4.0], 0.0, "sum", [1.0, 2.0, 4.0]),
    ([1.0, 2.0, 4.0], 1.0, "sum", [7.0, 6.0, 4.0]),
    ([1.0, 2.0, 4.0], 0.5, "sum", [3.0, 4.0, 4.0]),  # R2 = 2 + 0.5*4, R1 = 1 + 0.5*4
    ([1.0, 2.0, 4.0], 0.0, "max", [1.0, 2.0, 4.0]),
    ([1.0, 2.0, 4.0], 1.0, "max", [4.0, 4.0, 4.0]),
    ([1.0, 2.0, 4.0], 0.5, "max", [1.0, 2.0, 4.0]),  # R1 = max(1, 0.5*2, 0.25*4)
    ([3.0], 0.4, "sum", [3.0]), ([3.0], 0.4, "max", [3.0]),
    ([0.0, 0.0, 0.0], 0.4, "sum", [0.0, 0.0, 0.0]), ([0.0, 0.0, 0.0], 0.4, "max", [0.0, 0.0, 0.0]),
])
def test_aggregate_worked_examples(scores, gamma, mode, returns):
    assert aggregate(scores, gamma, mode) == pytest.approx(returns, abs=1e-12)


def test_step_reward_modes():
    assert step_reward([1.0, 2.0], last=False) == 2.0
    assert step_reward([1.0, 2.0], last=True) == 2.0
    assert step_reward([1.0, 2.0], last=False, reward_mode="return") == 0.0
    assert step_reward([1.0, 2.0, 4.0], last=True, gamma=0.5, reward_mode="return") == 3.0  # R_1 above
    assert step_reward([1.0, 2.0, 4.0], last=True, gamma=0.5, mode="max", reward_mode="return") == 1.0
    with pytest.raises(ConfigError, match="reward_mode"):
        step_reward([1.0], last=True, reward_mode="returns")


# ---- presets ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("preset", "expected"), [
    ("kevin", {"max_turns": 8, "score": "kevin", "aggregation": "sum", "gamma": 0.4, "checks": "standard"}),
    ("kevin-strict", {"max_turns": 8, "score": "kevin", "checks": "kevin-strict"}),
    ("kevin-max", {"max_turns": 4, "score": "kevin", "aggregation": "max", "gamma": 0.8}),
    ("tritonrl", {"max_turns": 1, "backend": "triton", "checks": "strict",
                  "score": {"name": "tritonrl", "correct_weight": 1.0, "speedup_weight": 1.0, "max_speedup": 2.0}}),
    ("cuda-agent", {"backend": "cuda", "aggregation": "max", "gamma": 1.0, "checks": "standard",
                    "score": {"name": "milestone", "faster_than": 1.0}}),
    ("autotriton", {"max_turns": 1, "backend": "triton", "checks": "strict",
                    "score": {"name": "linear", "weights": {"correct": 1.0, "speedup": 0.0}}}),
])
def test_presets_load(preset, expected):
    assert preset in list_presets()
    config = make_config(preset)
    for key, value in expected.items():
        assert getattr(config, key) == value, key


def test_preset_scores_behave_as_their_papers():
    t = sig(True, 1.5)
    assert get_score(make_config("tritonrl").score)(t) == 2.5
    assert get_score(make_config("cuda-agent").score)(t) == 2.0
    autotriton = get_score(make_config("autotriton").score)
    assert autotriton(t) == 1.0 and score_terms(autotriton, t) == {"correct": 1.0, "speedup": 1.5}
    assert autotriton(sig(True, 1.5, hacks=["library_op"])) == 0.0


def test_explicit_arguments_override_a_preset():
    config = make_config("cuda-agent", score="kevin", gamma=0.4, reward_mode="return")
    assert (config.score, config.gamma, config.aggregation, config.reward_mode) == ("kevin", 0.4, "max", "return")
    config = make_config("kevin", score={"name": "kevin", "correctness_weight": 0.5})
    assert get_score(config.score)(sig(True, 1.0)) == 1.5
    with pytest.raises(ConfigError, match="reward_mode"):
        make_config("kevin", reward_mode="sum")
    with pytest.raises(ConfigError, match="accepts"):
        make_config("tritonrl", score={"name": "tritonrl", "alpha": 0.1})


# ---- in the env (a scripted evaluator: no sandbox worker needed) -----------------------------------------------
class ScriptedEvaluator:
    """Returns the given results in order, whatever the job."""

    def __init__(self, *results):
        self.results = list(results)
        self.jobs = []

    def evaluate(self, job):
        self.jobs.append(job)
        return self.results.pop(0)

    def close(self):
        pass


def correct(speedup):
    return EvalResult(outcome=Outcome.CORRECT, backend="triton", compiled=True,
                      timing=Timing(runtime_ms=1.0, baseline_ms=speedup, runtime_cv=0.0, baseline_cv=0.0, trials=3,
                                    method="wall_clock"))


HACKED = EvalResult(outcome=Outcome.REJECTED, backend="triton", compiled=True, hacks=("side_stream",),
                    hack_details=("[side_stream] work on another stream",))
CODE = "import triton\n\n\nclass ModelNew:\n    pass\n"
ANSWER = f"I fuse the loads.\n```python\n{CODE}```\n"


def make(*results, **kwargs):
    kwargs.setdefault("device", "cpu")
    kwargs.setdefault("checks", "none")  # the scripted results stand for the whole evaluation, static rules included
    return gym.make("KernelRefine-v0", task="level1/relu", evaluator=ScriptedEvaluator(*results), **kwargs)


def test_return_mode_delivers_r1_at_the_last_step():
    env = make(correct(2.0), correct(4.0), max_turns=3, gamma=0.5, reward_mode="return")
    env.reset(seed=0)
    rewards, infos = [], []
    for action in (ANSWER, "no code", ANSWER):
        _, reward, _, truncated, info = env.step(action)
        rewards.append(reward)
        infos.append(info)
    # scores 2.3, 0, 4.3; R = [2.3 + 0.5*(0 + 0.5*4.3), 0.5*4.3, 4.3]
    assert [i["score"] for i in infos] == pytest.approx([2.3, 0.0, 4.3], abs=1e-12)
    assert infos[-1]["returns"] == pytest.approx([3.375, 2.15, 4.3], abs=1e-12)
    assert rewards == pytest.approx([0.0, 0.0, 3.375], abs=1e-12) and sum(rewards) == infos[-1]["returns"][0]
    env.close()


def test_score_mode_is_the_default_and_reward_terms_are_in_info():
    env = make(correct(1.5), HACKED, max_turns=2, score="tritonrl")
    env.reset(seed=0)
    _, reward, _, _, info = env.step(ANSWER)
    assert reward == info["score"] == 2.5
    assert info["reward_terms"] == {"syntax": 1.0, "func": 1.0, "valid": 1.0, "R_correct": 1.0, "R_speedup": 1.5}
    _, reward, _, _, info = env.step(ANSWER)
    assert reward == info["score"] == 0.0 and info["hacks"] == ["side_stream"] and info["reward_terms"]["func"] == 0.0
    env.close()


def test_a_hack_zeroes_a_custom_callable_score_too():
    env = make(HACKED, max_turns=1, score=lambda t: 5.0)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(ANSWER)
    assert reward == info["score"] == 0.0 and info["reward_terms"] == {}
    env.close()


def test_env_passes_lengths_and_difficulty_to_the_score():
    seen = []
    env = make(correct(1.0), max_turns=2, score=lambda t: seen.append(t) or 0.0)
    env.reset(seed=0)
    env.step(ANSWER)
    env.step("just words")
    code_chars = len(CODE)
    assert (seen[0].response_chars, seen[0].code_chars, seen[0].plan_chars) == (len(ANSWER), code_chars,
                                                                              len(ANSWER) - code_chars)
    assert seen[0].difficulty == 1.0  # level1/relu: its level
    assert (seen[1].code_chars, seen[1].plan_chars, seen[1].format_ok) == (0, len("just words"), False)
    env.close()


def test_plan_code_info_in_the_env_with_a_tokenizer():
    env = make(correct(1.5), max_turns=1, score="plan_code", tokenizer=FakeTokenizer())
    env.reset(seed=0)
    _, reward, _, _, info = env.step(ANSWER)
    assert reward == pytest.approx(0.1 * 1.5 + 1.0, abs=1e-12)
    pc = info["plan_code"]
    (code_span,) = pc["code_spans"]
    assert ANSWER[slice(*code_span)] == CODE and code_span == info["code_span"]
    assert (pc["plan_reward"], pc["code_reward"], pc["alpha"]) == (1.5, 1.0, 0.1)
    assert pc["num_tokens"] == len(ANSWER.split()) and pc["code_token_spans"] == [[5, 10]]
    env.close()


def test_plan_code_info_is_absent_for_other_scores():
    env = make(correct(1.5), max_turns=1)
    env.reset(seed=0)
    info = env.step(ANSWER)[4]
    assert "plan_code" not in info and info["reward_terms"] == {"correct": 1.0, "speedup": 1.5}
    env.close()
