"""Metrics on hand-made trajectories with known answers, the Not-Okay classifier, and reading rollout logs."""

import itertools
import random

import pytest

from kernel_gym.metrics import (
    Attempt,
    Trajectory,
    best_at_k,
    config_metrics,
    fast_p,
    mean_speedup,
    not_okay_reason,
    pass_at_k,
    summarize,
    turn_curves,
)
from kernel_gym.rollout.log import completed_keys, trajectories

WRONG = Attempt(turn=0, correct=False, compiled=True, error="mismatch")


def ok(speedup: float) -> Attempt:
    return Attempt(turn=0, correct=True, speedup=speedup, compiled=True)


FORMAT = Attempt(turn=0, correct=False, format_ok=False, error="format_error", not_okay="no_code_block")
HACK = Attempt(turn=0, correct=False, compiled=True, hacks=("timer_patch",), error="rejected")


def traj(task: str, index: int, *attempts: Attempt, config: str = "2x2") -> Trajectory:
    numbered = tuple(Attempt(**{**a.__dict__, "turn": i + 1}) for i, a in enumerate(attempts))
    return Trajectory(task=task, config=config, index=index, attempts=numbered, turns=len(numbered))


# Task A: one trajectory fixes a wrong kernel (1.5x), the other improves 0.5x -> 2.5x. Task B is never solved.
HAND = [traj("A", 0, WRONG, ok(1.5)), traj("A", 1, ok(0.5), ok(2.5)), traj("B", 0, FORMAT, WRONG), traj("B", 1, HACK, WRONG)]


def test_hand_made_metrics_exact():
    m = config_metrics("2x2", HAND, thresholds=(0.0, 1.0, 2.0, 3.0))
    assert (m.tasks, m.trajectories, m.attempts) == (2, 4, 8)
    assert m.rates == {"correct": 3 / 8, "compiled": 7 / 8, "hack": 1 / 8, "format_error": 1 / 8, "not_okay": 1 / 8,
                       "summary_fallback": 0.0}
    assert m.mean_speedup == pytest.approx((2.5 + 0.0) / 2)  # Kevin: best correct per task, unsolved counts 0
    assert m.solved == 0.5
    assert m.fast_p == {0.0: 0.5, 1.0: 0.5, 2.0: 0.5, 3.0: 0.0}
    assert m.best_at_k == {1: pytest.approx((2.0 + 0.0) / 2), 2: pytest.approx(1.25)}
    assert m.pass_at_k == {1: 0.5, 2: 0.5}
    assert m.turn_best == [pytest.approx(0.25), pytest.approx(1.25)]  # t=1: A's best is 0.5; t=2: 2.5
    assert m.turn_mean == [pytest.approx(0.125), pytest.approx(1.0)]  # A: mean(0, 0.5), then mean(1.5, 2.5)
    assert m.budget_curve == [(2, pytest.approx(1.0)), (4, pytest.approx(1.25))]
    assert m.not_okay_reasons == {"no_code_block": 1}
    flat = m.flat()
    assert flat["task/mean_speedup"] == pytest.approx(1.25) and flat["task/fast_1"] == 0.5 and flat["best@2"] == 1.25



def test_review_flags_beside_hacks_only_with_a_reviewer():
    flagged = Attempt(turn=0, correct=True, speedup=1.2, compiled=True, review_flags=("judge_not_genuine",), judge=0.0)
    rated = Attempt(turn=0, correct=True, speedup=2.0, compiled=True, review_flags=(), judge=0.8)
    unrated = Attempt(turn=0, correct=False, compiled=True, error="mismatch", review_flags=())
    m = config_metrics("1x2", [traj("A", 0, flagged, unrated), traj("B", 0, rated, HACK)])
    assert m.rates["review_flag"] == 1 / 4 and m.rates["hack"] == 1 / 4  # a flag is not a hack
    assert m.review_flags == {"judge_not_genuine": 1} and m.judge_mean == pytest.approx(0.4)
    assert m.flat()["rate/review_flag"] == 0.25 and m.flat()["judge/mean"] == pytest.approx(0.4)
    plain = config_metrics("2x2", HAND)  # no LLM reviewer: no review rate, no rating mean
    assert "review_flag" not in plain.rates and plain.review_flags == {} and plain.judge_mean is None
    info = {"turn": 1, "correct": True, "speedup": 1.5, "review_flags": ["judge_not_genuine"],
            "signals": {"judge": 0.0, "judge_genuine": 0.0}}
    a = Attempt.from_info(info)
    assert a.review_flags == ("judge_not_genuine",) and a.judge == 0.0
    assert Attempt.from_info({"turn": 1}).review_flags is None

def test_infrastructure_failures_are_counted_and_the_report_warns():
    from kernel_gym.report import infra_note

    failed = Attempt.from_info({"turn": 1, "correct": False, "error": "crash", "infra_failure": True})
    assert failed.infra_failure and not Attempt.from_info({"turn": 1, "error": "crash"}).infra_failure
    m = config_metrics("1x2", [traj("A", 0, failed, ok(1.5))])
    assert m.infra_failures == 1 and m.rates["correct"] == 1 / 2  # counted as incorrect, and said so
    assert "1x2: 1" in infra_note({"1x2": m}) and "rerun" in infra_note({"1x2": m})
    assert infra_note({"2x2": config_metrics("2x2", HAND)}) is None


def test_fast_p_is_strictly_greater_and_needs_correctness():
    # A correct 1.0x is not fast_1; an incorrect kernel's speedup never counts.
    trajs = [traj("A", 0, ok(1.0), ok(1.0)), traj("B", 0, Attempt(turn=0, correct=False, speedup=9.0), WRONG)]
    assert fast_p(trajs, 1.0) == 0.0
    assert fast_p(trajs, 0.0) == 0.5
    assert fast_p(trajs, 0.99) == 0.5
    assert mean_speedup(trajs) == pytest.approx(0.5)


def test_best_at_k_matches_brute_force():
    assert best_at_k([1, 2, 3, 4], 2) == pytest.approx(20 / 6)
    assert best_at_k([5, 1], 2) == 5 and best_at_k([5, 1], 1) == 3
    rng = random.Random(0)
    for _ in range(20):
        values = [rng.choice([0.0, rng.random() * 3]) for _ in range(rng.randint(1, 7))]
        for k in range(1, len(values) + 1):
            subsets = list(itertools.combinations(values, k))
            assert best_at_k(values, k) == pytest.approx(sum(max(s) for s in subsets) / len(subsets))
    with pytest.raises(ValueError):
        best_at_k([1.0], 2)


def test_pass_at_k():
    assert pass_at_k([True, False, False, False], 2) == pytest.approx(0.5)
    assert pass_at_k([False] * 3, 3) == 0 and pass_at_k([True, False], 2) == 1


def test_turn_curves_single_turn_and_ragged():
    best, mean = turn_curves([traj("A", 0, ok(2.0)), traj("A", 1, WRONG)])
    assert best == [2.0] and mean == [1.0]


def test_summarize_leaves_out_incomplete_and_keeps_order():
    partial = Trajectory(task="A", config="1x2", index=0, attempts=(ok(9.0),), turns=2)
    full = [traj("A", 0, ok(1.0), config="4x1"), *HAND]
    out = summarize([*full, partial])
    assert list(out) == ["4x1", "2x2"]
    assert summarize([partial], include_incomplete=True)["1x2"].mean_speedup == 9.0


CODE = "```python\nimport torch\nclass ModelNew:\n    pass\n```\n"


@pytest.mark.parametrize("response, reason", [
    ("", "empty"),
    ("   \n\t ", "empty"),
    (None, "empty"),
    ("!" * 300 + CODE, "garbage_opening"),
    ("the " * 40 + CODE, "garbage_opening"),
    ("I will write a kernel.\n" * 5 + CODE, "garbage_opening"),
    ("\x00\x01binary" + CODE, "garbage_opening"),
    ("I think the answer is to fuse the ops, but no code here.", "no_code_block"),
    ("Plan.\n```python\nimport torch\nclass ModelNew:\n", "unclosed_code_block"),
    ("Plan.\n```python\n\n```\n", "empty_code_block"),
    ("Plan.\n```python\ndef broken(:\n    pass\n```\n", "unparseable"),
    ("Plan: one fused pass.\n" + CODE, None),
    ("Plan.\n```text\nnot python ( \n```\nThen:\n" + CODE + "Done.", None),  # the last block is the code
    ("Short repeat ok ok ok ok.\n" + CODE, None),  # a repeat shorter than 64 characters is not garbage
])
def test_not_okay_reasons(response, reason):
    assert not_okay_reason(response) == reason


def _record(config, task, index, turn, turns, episode, correct=True, speedup=1.0, action=CODE):
    return {"config": config, "task": task, "trajectory": index, "turn": turn, "turns": turns, "episode_id": episode,
            "action": action, "info": {"turn": turn, "correct": correct, "speedup": speedup if correct else None,
                                       "format_ok": True, "compiled": True, "hacks": [], "score": 0.0}}


def test_log_reading_prefers_the_complete_episode(tmp_path):
    records = [
        _record("1x2", "A", 0, 1, 2, "e1", speedup=5.0),  # a killed attempt: turn 1 only
        _record("1x2", "A", 0, 1, 2, "e2", speedup=1.0),
        _record("1x2", "A", 0, 2, 2, "e2", speedup=2.0),
        _record("1x2", "B", 0, 1, 2, "e3"),  # still incomplete
        _record("2x1", "A", 1, 1, 1, "e4", correct=False, action="no code"),
    ]
    assert completed_keys(records) == {("1x2", "A", 0), ("2x1", "A", 1)}
    got = {(t.config, t.task, t.index): t for t in trajectories(records)}
    assert [a.speedup for a in got["1x2", "A", 0].attempts] == [1.0, 2.0]
    assert not got["1x2", "B", 0].complete
    assert got["2x1", "A", 1].attempts[0].not_okay == "no_code_block"  # recomputed when the record has none


def test_a_paired_difference_states_a_winner_only_when_its_interval_excludes_zero():
    """Configuration a vs b on the same tasks: the paired bootstrap interval of the mean speedup difference; a
    winner only when it excludes 0, never from one task."""
    from kernel_gym.metrics import Attempt, Trajectory, paired_difference

    def traj(task, config, speedup):
        return Trajectory(task, config, 0, (Attempt(turn=1, correct=True, speedup=speedup),), turns=1)

    tasks = [f"t{i}" for i in range(12)]
    clear = [traj(t, "a", 2.0 + i) for i, t in enumerate(tasks)] + [traj(t, "b", 1.0 + i) for i, t in enumerate(tasks)]
    d = paired_difference(clear, "a", "b")
    assert d.tasks == 12 and d.difference == 1.0 and d.ci == (1.0, 1.0) and d.winner == "a"
    assert paired_difference(clear, "b", "a").winner == "a"  # b - a < 0: a wins
    noisy = [traj(t, "a", 1.0 + (i % 2)) for i, t in enumerate(tasks)] + [traj(t, "b", 2.0 - (i % 2)) for i, t in
                                                                          enumerate(tasks)]
    d = paired_difference(noisy, "a", "b")
    assert d.ci[0] < 0 < d.ci[1] and d.winner is None
    one = [traj("t0", "a", 3.0), traj("t0", "b", 1.0)]
    assert paired_difference(one, "a", "b").winner is None  # one task: no interval, no winner
