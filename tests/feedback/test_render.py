"""Feedback text: the extractive summary, and observations that fit their character budget."""

import pytest

from kernel_gym.eval.result import EvalResult, Mismatch, Outcome, Timing
from kernel_gym.feedback import TurnView, extractive_summary, render_feedback, render_observation, status_line

REASONING = (
    "<think>The reference is a row softmax over 4096 columns. "
    "I looked at the weather today. "
    "The kernel is memory-bound, so one fused pass with a block per row keeps bandwidth high. "
    "Nothing else matters here really. "
    "The previous error was a wrong mask on the last tile, which I fix by masking with offs < n_cols. "
    "Also the coffee was cold.</think>"
)
PROMPT = "You are an expert. Write a faster ModelNew.\n" + "Task text. " * 20


def test_summary_is_deterministic_and_extractive():
    a, b = extractive_summary(REASONING, 400), extractive_summary(REASONING, 400)
    assert a == b
    assert a.startswith("The reference is a row softmax over 4096 columns.")  # the first sentence
    assert "memory-bound" in a and "wrong mask" in a  # technical sentences kept
    assert "weather" not in a and "coffee" not in a  # small talk dropped
    assert "<think>" not in a
    assert a.index("memory-bound") < a.index("wrong mask")  # original order


@pytest.mark.parametrize("budget", [40, 80, 120, 200, 400, 2000])
def test_summary_within_budget(budget):
    summary = extractive_summary(REASONING * 5, budget)
    assert 0 < len(summary) <= budget


def test_summary_of_nothing_is_empty():
    assert extractive_summary("", 400) == ""
    assert extractive_summary("   \n ", 400) == ""


def turn(i: int, code_lines: int = 40) -> TurnView:
    code = "\n".join(f"x_{i}_{j} = {j}  # KERNEL_{i}" for j in range(code_lines))
    return TurnView(
        turn=i,
        status="mismatch",
        summary=f"SUMMARY_{i} tiled by 128.",
        code=code,
        feedback=f"FEEDBACK_{i}: wrong output.",
    )


def test_everything_shown_when_it_fits():
    turns = [turn(1), turn(2), turn(3)]
    text = render_observation(PROMPT, turns, max_turns=8, max_chars=100_000)
    for i in (1, 2, 3):
        assert f"KERNEL_{i}" in text and f"SUMMARY_{i}" in text and f"FEEDBACK_{i}" in text
    assert text.startswith(PROMPT.rstrip())
    assert "Turn 4 of 8" in text
    assert "omitted" not in text


def test_no_turns_is_the_prompt():
    assert render_observation(PROMPT, [], max_turns=8, max_chars=100) == PROMPT


def test_old_kernels_are_dropped_first():
    turns = [turn(1), turn(2), turn(3)]
    full = render_observation(PROMPT, turns, max_turns=8, max_chars=100_000)
    budget = len(full) - 200  # a little too long: only the oldest kernel has to go
    text = render_observation(PROMPT, turns, max_turns=8, max_chars=budget)
    assert len(text) <= budget
    assert "KERNEL_1" not in text
    assert "KERNEL_2" in text and "KERNEL_3" in text
    assert "(kernel omitted to fit the context budget)" in text
    for i in (1, 2, 3):  # summaries and feedback stay
        assert f"SUMMARY_{i}" in text and f"FEEDBACK_{i}" in text


def test_then_whole_turns_are_omitted_with_a_note():
    turns = [turn(i, code_lines=5) for i in range(1, 7)]
    without_history = render_observation(PROMPT, turns[-1:], max_turns=8, max_chars=100_000)
    budget = len(without_history) + 500  # room for about two short history turns
    text = render_observation(PROMPT, turns, max_turns=8, max_chars=budget)
    assert len(text) <= budget
    assert "SUMMARY_1" not in text  # the oldest turn is gone
    assert "SUMMARY_6" in text and "FEEDBACK_6" in text and "KERNEL_6" in text  # the latest stays whole
    assert "omitted to fit the context budget" in text
    assert "earlier turns omitted" in text


@pytest.mark.parametrize("budget", [3000, 6000, 12000])
def test_always_within_max_chars(budget):
    turns = [turn(i, code_lines=60) for i in range(1, 8)]
    text = render_observation(PROMPT, turns, max_turns=8, max_chars=budget)
    assert len(text) <= budget
    assert "FEEDBACK_7" in text


@pytest.mark.parametrize(("keep", "shown"), [(1, {4}), (2, {3, 4}), (3, {2, 3, 4}), (10, {1, 2, 3, 4}), (0, {4})])
def test_keep_kernels(keep, shown):
    turns = [turn(i, code_lines=3) for i in range(1, 5)]
    text = render_observation(PROMPT, turns, max_turns=8, max_chars=100_000, keep_kernels=keep)
    assert {i for i in range(1, 5) if f"KERNEL_{i}" in text} == shown
    assert all(f"SUMMARY_{i}" in text for i in range(1, 5))


def test_feedback_texts():
    timing = Timing(runtime_ms=2.0, baseline_ms=3.0, runtime_cv=0.01, baseline_cv=0.02, trials=3, method="wall_clock")
    ok = EvalResult(Outcome.CORRECT, timing=timing, compiled=True)
    assert render_feedback(ok).startswith("CORRECT. Runtime 2 ms vs reference 3 ms: speedup 1.5x")
    assert status_line(ok) == "correct, speedup 1.5x (2 ms)"
    bad = EvalResult(Outcome.MISMATCH, message="max abs error 1", mismatch=Mismatch(1.0, 1.0, "here"))
    assert render_feedback(bad).startswith("WRONG OUTPUT") and "max abs error 1" in render_feedback(bad)
    hack = EvalResult(Outcome.REJECTED, hacks=("decoy_kernel",), hack_details=("the kernels were decoys",))
    assert "decoy_kernel" in render_feedback(hack) and "- the kernels were decoys" in render_feedback(hack)
    assert status_line(hack) == "rejected (decoy_kernel)"
    for outcome in Outcome:
        assert render_feedback(EvalResult(outcome, message="MSG", timing=timing)).strip()
    assert "resolution" not in render_feedback(ok)


def test_feedback_says_when_timings_were_at_the_clocks_resolution():
    """Work shorter than the clock's jitter reads as its resolution (never 0 ms): the agent is told the speedup
    says little, rather than chasing a number made of noise (tiny tasks on a loaded cpu machine)."""
    timing = Timing(runtime_ms=0.02, baseline_ms=0.02, runtime_cv=0.0, baseline_cv=0.0, trials=3,
                    method="judge_wall_clock", resolution_ms=0.02)
    text = render_feedback(EvalResult(Outcome.CORRECT, timing=timing, signals={"readings_at_resolution": 5.0}))
    assert "5 of the 6 timed runs were at the clock's resolution (0.02 ms)" in text, text


def test_accuracy_line_names_the_precision_the_reference_ran_at():
    """A bf16 task's (or precision="bf16" job's) reference is a bf16 one: the feedback says so, not "fp32"."""
    budget = {"rule": "oracle", "metric": "rel_l2", "output": 0, "candidate_error": 0.02, "reference_error": 0.01,
              "ratio": 2.0, "k": 8.0, "floor": 0.03, "limit": 0.11}
    result = EvalResult(Outcome.MISMATCH, message="m", mismatch=Mismatch(1.0, 1.0, "here"), correctness=budget)
    assert "the fp32 reference's 0.01" in render_feedback(result)
    bf16 = render_feedback(result, dtype="bfloat16")
    assert "the bf16 reference's 0.01" in bf16 and "fp32" not in bf16
    assert "the fp16 reference's" in render_feedback(result, dtype="float16")
