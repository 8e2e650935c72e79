"""The comparison the judge decides correctness with, at the edges of float32."""

import math

import torch

from kernel_gym.judge.compare import compare_outputs

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


def test_a_comparison_in_chunks_says_what_a_whole_one_says(monkeypatch):
    """The comparison runs CHUNK elements at a time (its temporaries were ~7 float32 copies of a whole output). Cut
    into many small chunks or taken whole, every verdict, count, error and first bad index is the same: NaN/inf
    placement, degenerate outputs, half precision, errors that straddle a chunk's edge."""
    import random

    from kernel_gym.judge import compare

    random.seed(0)
    gen = torch.Generator().manual_seed(0)
    for _ in range(300):
        n = random.choice([1, 999, 1000, 1001, 4321])
        dtype = random.choice([torch.float32, torch.float16, torch.bfloat16, torch.float64])
        e = torch.randn(n, dtype=torch.float64, generator=gen) * 10 ** random.uniform(-3, 3)
        g, mode = e.clone(), random.randrange(6)
        idx = torch.randint(0, n, (max(1, n // 50),), generator=gen)
        if mode == 0:
            g += torch.randn(n, dtype=torch.float64, generator=gen) * 10 ** random.uniform(-8, 0)
        elif mode == 1:
            g.zero_()
        elif mode == 2:
            g[idx] = float("nan")
        elif mode == 3:
            e[idx] = g[idx] = float("nan")
        elif mode == 4:
            e[idx], g[idx] = float("inf"), random.choice([float("inf"), float("-inf"), 1.0])
        g, e = g.to(dtype), e.to(dtype)
        tol = random.choice([1e-2, 1e-4])
        verdicts = []
        for chunk in (1000, 1 << 30):
            monkeypatch.setattr(compare, "CHUNK", chunk)
            verdicts.append(compare_outputs(g, e, tol, tol, tol))
        small, whole = verdicts
        assert (small is None) == (whole is None), (small, whole)
        if small is not None:
            assert (small.kind, small.n_bad, small.where) == (whole.kind, whole.n_bad, whole.where)
            assert math.isclose(small.max_abs_err, whole.max_abs_err, rel_tol=1e-6)
            assert math.isclose(small.max_rel_err, whole.max_rel_err, rel_tol=1e-6)


def test_input_mutation_is_seen_in_any_chunk(monkeypatch):
    """The judge's input-mutation check (its pristine inputs against the runner's buffers after a call) runs CHUNK
    elements at a time too: a change in the last element of the last chunk is seen; NaN where both have it is equal."""
    from kernel_gym.judge import compare

    monkeypatch.setattr(compare, "CHUNK", 1000)
    x = torch.randn(4321)
    x[7] = float("nan")
    y = x.clone()
    assert compare.tensors_equal([x, 3], [y, 3])
    y[-1] += 1
    assert not compare.tensors_equal([x, 3], [y, 3])
    assert not compare.tensors_equal([x], [x.double()])


def test_the_structure_is_checked_before_any_value():
    """A later output's wrong shape is a `structure` mismatch even when an earlier output's values also differ (the
    values of outputs whose shapes differ were compared chunk by chunk before: the judge's oracle path then read a
    chunk of one shape against another's); no value is read for it."""
    from kernel_gym.judge.compare import structure_mismatch

    e = [torch.ones(4), torch.ones(3, 2), 7]
    assert structure_mismatch([torch.ones(4), torch.ones(3, 2), 7], e) is None
    for got, what in (([torch.zeros(4), torch.ones(2, 3), 7], "shape (2, 3)"),
                      ([torch.ones(4), torch.ones(3, 2, dtype=torch.float64), 7], "dtype torch.float64"),
                      ([torch.ones(4), [1.0], 7], "is a list"), ([torch.ones(4), torch.ones(3, 2), 8], "got 8"),
                      ([torch.ones(4)], "returned 1 outputs")):
        m = structure_mismatch(got, e)
        assert m is not None and m.kind == "structure" and what in m.where, (what, m)
        assert compare_outputs(got, e, ATOL, RTOL, L2).kind == "structure"
