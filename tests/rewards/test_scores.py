"""The score registry: Kevin's score, hacks zeroing it, lookups by name and callables."""

import pytest

from kernel_gym.errors import UnknownScoreError
from kernel_gym.rewards import TurnSignals, get_score, kevin_score, list_scores, register_score
from kernel_gym.rewards import scores as scores_module


def signals(correct=True, speedup=None, hacks=()):
    return TurnSignals(format_ok=True, compiled=True, correct=correct, speedup=speedup, hacks=tuple(hacks))


def test_registry_lists_kevin_and_correctness():
    names = list_scores()
    assert "kevin" in names and "correctness" in names
    assert names == sorted(names)


@pytest.mark.parametrize(("speedup", "expected"), [(2.0, 2.3), (0.5, 0.8), (1.0, 1.3), (0.0082, 0.3082), (None, 0.3)])
def test_kevin_correct(speedup, expected):
    assert get_score("kevin")(signals(True, speedup)) == pytest.approx(expected, abs=1e-12)


def test_kevin_incorrect_is_zero_whatever_the_speedup():
    kevin = get_score("kevin")
    assert kevin(signals(False, 5.0)) == 0.0
    assert kevin(TurnSignals(format_ok=False, compiled=False, correct=False, speedup=None)) == 0.0


def test_hacks_zero_the_score():
    assert get_score("kevin")(signals(True, 3.0, hacks=["decoy_kernel"])) == 0.0
    assert get_score("correctness")(signals(True, 3.0, hacks=["library_op"])) == 0.0


def test_correctness_score():
    assert get_score("correctness")(signals(True, 9.0)) == 1.0
    assert get_score("correctness")(signals(False, None)) == 0.0


def test_kevin_weight_is_a_parameter():
    assert kevin_score(1.0)(signals(True, 2.0)) == 3.0
    assert kevin_score(0.0)(signals(True, 2.0)) == 2.0
    assert "0.3" in get_score("kevin").__doc__


def test_unknown_score_name_raises_with_a_hint():
    with pytest.raises(UnknownScoreError) as excinfo:
        get_score("kevn")
    assert "Did you mean 'kevin'" in str(excinfo.value)
    assert "kevin" in excinfo.value.choices


def test_a_callable_passes_through():
    def mine(t: TurnSignals) -> float:
        return 42.0 if t.correct else -1.0

    assert get_score(mine) is mine
    assert get_score(mine)(signals(False)) == -1.0


def test_register_score(monkeypatch):
    monkeypatch.setattr(scores_module, "_REGISTRY", dict(scores_module._REGISTRY))

    @register_score("double_speedup")
    def double(t: TurnSignals) -> float:
        """S = 2 * speedup."""
        return 2.0 * (t.speedup or 0.0)

    assert "double_speedup" in list_scores()
    assert get_score("double_speedup")(signals(True, 1.5)) == 3.0
