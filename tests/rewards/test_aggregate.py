"""aggregate(): Kevin's discounted look-ahead returns, checked against hand-computed values."""

import pytest

from kernel_gym.errors import ConfigError
from kernel_gym.rewards import aggregate


def test_sum_hand_computed():
    # R3 = 2.0; R2 = 0 + 0.4 * 2.0 = 0.8; R1 = 0.5 + 0.4 * 0.8 = 0.82
    assert aggregate([0.5, 0.0, 2.0], gamma=0.4, mode="sum") == pytest.approx([0.82, 0.8, 2.0], abs=1e-12)


def test_max_hand_computed():
    # R3 = 2.0; R2 = max(0, 0.4 * 2.0) = 0.8; R1 = max(0.5, 0.4 * 0.8, 0.16 * 2.0) = 0.5
    assert aggregate([0.5, 0.0, 2.0], gamma=0.4, mode="max") == pytest.approx([0.5, 0.8, 2.0], abs=1e-12)


def test_sum_is_the_default_with_gamma_04():
    # the demo episode: scores 0, 0, 1.3 -> 0.16 * 1.3, 0.4 * 1.3, 1.3
    assert aggregate([0.0, 0.0, 1.3]) == pytest.approx([0.208, 0.52, 1.3], abs=1e-12)


def test_sum_matches_the_definition():
    scores, gamma = [0.3, 1.7, 0.0, 2.5, 0.9], 0.7
    expected = [sum(gamma ** (i - t) * scores[i] for i in range(t, len(scores))) for t in range(len(scores))]
    assert aggregate(scores, gamma, "sum") == pytest.approx(expected, abs=1e-12)
    expected_max = [max(gamma ** (i - t) * scores[i] for i in range(t, len(scores))) for t in range(len(scores))]
    assert aggregate(scores, gamma, "max") == pytest.approx(expected_max, abs=1e-12)


@pytest.mark.parametrize("mode", ["sum", "max"])
def test_gamma_zero_returns_the_scores(mode):
    assert aggregate([1.0, 0.0, 3.0, 2.0], gamma=0.0, mode=mode) == [1.0, 0.0, 3.0, 2.0]


def test_gamma_one():
    assert aggregate([1.0, 0.0, 3.0, 2.0], gamma=1.0, mode="sum") == [6.0, 5.0, 5.0, 2.0]
    assert aggregate([1.0, 0.0, 3.0, 2.0], gamma=1.0, mode="max") == [3.0, 3.0, 3.0, 2.0]


def test_single_and_empty_episodes():
    assert aggregate([0.7], 0.4, "sum") == [0.7]
    assert aggregate([0.7], 0.4, "max") == [0.7]
    assert aggregate([], 0.4, "sum") == []


def test_returns_are_floats():
    out = aggregate([1, 2], 0.5, "sum")
    assert out == [2.0, 2.0] and all(type(r) is float for r in out)


@pytest.mark.parametrize("gamma", [-0.1, 1.5])
def test_gamma_out_of_range_raises(gamma):
    with pytest.raises(ConfigError, match="gamma"):
        aggregate([1.0], gamma=gamma)


def test_unknown_mode_raises():
    with pytest.raises(ConfigError, match="aggregation"):
        aggregate([1.0], mode="mean")
