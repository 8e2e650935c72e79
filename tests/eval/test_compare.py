"""The comparison the judge decides correctness with, at the edges of float32."""

import math

import torch

from kernel_gym.eval.compare import compare_outputs

ATOL = RTOL = L2 = 1e-2


def test_a_huge_valued_reference_is_not_matched_by_anything():
    """The tolerance scales with the reference's RMS; in float32 the sum of squares of values past ~1e19 overflows,
    which made the tolerance infinite and let any output (zeros here) through."""
    expected = torch.full((1000,), 1e20)
    assert compare_outputs(torch.zeros(1000), expected, ATOL, RTOL, L2).n_bad == 1000
    assert compare_outputs(expected * (1 + 1e-6), expected, ATOL, RTOL, L2) is None  # a genuine one still passes


def test_finite_outputs_far_apart_report_finite_errors():
    """Two finite float32 values ~3e38 apart differ by more than float32 holds: the error is reported in float64,
    not as inf (a result's numbers are always finite)."""
    expected = torch.full((10,), 3e38)
    m = compare_outputs(-expected, expected, ATOL, RTOL, L2)
    assert m.kind == "value" and m.n_bad == 10
    assert math.isfinite(m.max_abs_err) and math.isfinite(m.max_rel_err) and m.max_abs_err > 5e38


def test_special_values_must_match_where_the_reference_has_them():
    expected = torch.tensor([1.0, float("inf"), float("nan")])
    assert compare_outputs(expected.clone(), expected, ATOL, RTOL, L2) is None
    assert compare_outputs(torch.tensor([1.0, 1.0, float("nan")]), expected, ATOL, RTOL, L2).n_bad == 1
