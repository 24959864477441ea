"""Bootstrap construction: cross-checks against scipy, analytic resampling laws and a naive loop."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pytest_agentfloor.stats import bootstrap as bs
from pytest_agentfloor.stats import mean_ci, ratio_ci, resample_weights
from fractions import Fraction
from pytest_agentfloor.stats.bootstrap import cluster_sums


def test_mean_ci_agrees_with_scipy_percentile() -> None:
    x = np.random.default_rng(7).normal(10.0, 2.0, 600)
    ours = mean_ci(x, n_boot=10_000, seed=42)
    ref = stats.bootstrap((x,), np.mean, n_resamples=10_000, method="percentile", confidence_level=0.95,
                          rng=np.random.default_rng(123))
    se = x.std(ddof=1) / np.sqrt(x.size)  # ~0.08; Monte Carlo error of a 2.5 % quantile is ~0.005
    assert ours.estimate == pytest.approx(x.mean(), abs=1e-12)
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.1 * se)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.1 * se)


def test_binary_mean_ci_agrees_with_scipy() -> None:
    x = (np.random.default_rng(3).random(400) < 0.3).astype(float)
    ours = mean_ci(x)
    ref = stats.bootstrap((x,), np.mean, n_resamples=10_000, method="percentile", rng=np.random.default_rng(9))
    assert abs(ours.low - ref.confidence_interval.low) <= 2 / x.size + 1e-12
    assert abs(ours.high - ref.confidence_interval.high) <= 2 / x.size + 1e-12


def test_iid_bernoulli_bounds_match_binomial_quantiles() -> None:
    # 15 of 50 single-run units pass: a replicate is Binomial(50, 0.3) / 50 exactly.
    x = np.array([1.0] * 15 + [0.0] * 35)
    ci = mean_ci(x, n_boot=10_000, seed=42)
    lo = stats.binom.ppf(0.025, 50, 0.3) / 50
    hi = stats.binom.isf(0.025, 50, 0.3) / 50
    assert abs(ci.low - lo) <= 1 / 50 + 1e-12
    assert abs(ci.high - hi) <= 1 / 50 + 1e-12


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_all_or_nothing_gives_degenerate_interval(value: float) -> None:
    ci = mean_ci(np.full(37, value))
    assert (ci.estimate, ci.low, ci.high) == (value, value, value)


def test_single_unit_and_empty() -> None:
    ci = ratio_ci([3.0], [5.0])
    assert (ci.estimate, ci.low, ci.high, ci.n_units) == (0.6, 0.6, 0.6, 1)
    empty = ratio_ci([], [])
    assert (empty.estimate, empty.low, empty.high, empty.n_units) == (None, None, None, 0)


def test_replicates_match_documented_index_draw() -> None:
    """A replicate is sum(num[idx_b]) / sum(den[idx_b]) with idx = default_rng(seed).integers(0, U, (B, U))."""
    num = np.array([2.0, 0.0, 3.0, 1.0, 4.0])
    den = np.array([4.0, 3.0, 4.0, 2.0, 4.0])  # unequal units (e.g. infra exclusions)
    n_boot, seed = 300, 11
    idx = np.random.default_rng(seed).integers(0, num.size, size=(n_boot, num.size))
    naive = np.array([num[row].sum() / den[row].sum() for row in idx])
    cs = bs.ClusterSums(np.zeros(5, dtype=np.int64), num, den, 1)
    s_num, s_den = bs.bootstrap_sums(cs, n_boot, seed)
    np.testing.assert_array_equal(s_num[:, 0] / s_den[:, 0], naive)


def test_balanced_units_equal_mean_of_unit_means() -> None:
    rng = np.random.default_rng(0)
    passes = rng.integers(0, 6, size=8).astype(float)  # 8 units of 5 tasks each
    cs = bs.ClusterSums(np.zeros(8, dtype=np.int64), passes, np.full(8, 5.0), 1)
    s_num, s_den = bs.bootstrap_sums(cs, 500, 42)
    idx = np.random.default_rng(42).integers(0, 8, size=(500, 8))
    np.testing.assert_allclose(s_num[:, 0] / s_den[:, 0], (passes / 5.0)[idx].mean(axis=1), rtol=0, atol=1e-15)


def test_cells_are_independent_of_each_other() -> None:
    """Cells of equal size share draws; adding cells never changes an existing cell's replicates."""
    a = np.array([1.0, 0.0, 1.0, 1.0])
    b = np.array([0.0, 0.0, 1.0, 0.0])
    c = np.array([1.0, 1.0, 0.0])
    alone = bs.bootstrap_sums(bs.cluster_sums(np.zeros(4, int), np.arange(4), a, None, 1), 200, 5)[0][:, 0]
    cells = np.array([0] * 4 + [1] * 4 + [2] * 3)
    joint = bs.cluster_sums(cells, np.r_[np.arange(4), np.arange(4), np.arange(3)], np.r_[a, b, c], None, 3)
    s_num, _ = bs.bootstrap_sums(joint, 200, 5)
    np.testing.assert_array_equal(s_num[:, 0], alone)
    assert s_num.shape == (200, 3)


def test_chunked_generation_is_the_same_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = resample_weights(37, 1000, 42)
    monkeypatch.setattr(bs, "_MAX_CHUNK_ELEMS", 37 * 7)  # force many row blocks
    np.testing.assert_array_equal(resample_weights(37, 1000, 42), whole)
    assert np.all(whole.sum(axis=1) == 37)


def test_order_bounds_agree_with_tail_fractions() -> None:
    """lower(a) > t  <=>  #{rep <= t}/B < a   and   upper(a) < t  <=>  #{rep >= t}/B < a."""
    rng = np.random.default_rng(1)
    reps = np.round(rng.normal(0, 5, 2000), 1)  # discrete, with ties
    srt = np.sort(reps)
    for a in (0.025, 0.05, 0.1):
        lo, hi = bs.order_bounds(srt, a)
        for t in np.unique(np.r_[reps, reps + 0.05]):
            assert (lo > t) == (np.mean(reps <= t) < a)
            assert (hi < t) == (np.mean(reps >= t) < a)


def test_cluster_sums_groups_units_within_cells() -> None:
    cs = bs.cluster_sums(np.array([1, 0, 1, 1]), np.array([7, 7, 2, 7]), np.array([1.0, 1.0, 0.0, 1.0]), None, 3)
    assert cs.cell.tolist() == [0, 1, 1]
    assert cs.num.tolist() == [1.0, 0.0, 2.0]
    assert cs.den.tolist() == [1.0, 1.0, 2.0]
    assert cs.n_units.tolist() == [1, 2, 0]


# -- bootstrap and reliability at their edges (the mutation run's survivors) -----------------------
# Mutation survivors of stats/bootstrap.py and stats/reliability.py, killed by hand-worked cases.
#
# Each test names the mutants it kills (issue 20). Expected values are worked out in the comments,
# never computed by the function under test.


def test_cluster_sums_accepts_float_codes() -> None:
    """x_cluster_sums__mutmut_3, _5, _40, _42: cell and unit codes are made int64.

    Codes built with ``np.zeros(n)`` or read from a float column are floats; without the int64
    conversion the combined key, and so ``ClusterSums.cell``, stays float and ``n_units``
    (np.bincount) refuses it.
    """
    # one cell (all 0.0), units 0, 1, 1, 2; passes 1, 0, 1, 1
    cs = cluster_sums(np.zeros(4), np.array([0.0, 1.0, 1.0, 2.0]), np.array([1.0, 0.0, 1.0, 1.0]), None, 1)
    assert cs.n_units.tolist() == [3]          # units 0, 1, 2
    assert cs.cell.tolist() == [0, 0, 0]
    assert cs.num.tolist() == [1.0, 1.0, 1.0]  # unit 1 holds 0 + 1
    assert cs.den.tolist() == [1.0, 2.0, 1.0]  # one weight per observation
    num_tot, den_tot = cs.totals
    assert num_tot.tolist() == [3.0] and den_tot.tolist() == [4.0]


def test_cluster_sums_accepts_exact_fractions() -> None:
    """x_cluster_sums__mutmut_8, _10, _17, _19: values (8, 10) and weights (17, 19) are made float64.

    A caller holding exact shares as ``fractions.Fraction`` gets an object array; np.bincount
    only takes float weights, so the float64 conversion is what makes these inputs work.
    """
    cell = [0, 0, 1, 1, 1]
    unit = [0, 0, 0, 1, 1]
    num = [Fraction(1, 2), Fraction(1, 4), Fraction(3, 4), Fraction(0), Fraction(1, 2)]
    den = [Fraction(1), Fraction(1, 2), Fraction(1), Fraction(1, 4), Fraction(1, 4)]
    cs = cluster_sums(cell, unit, num, den, 2)
    # cell 0 unit 0: 1/2 + 1/4 = 0.75 over 1 + 1/2 = 1.5; cell 1 unit 0: 0.75 over 1;
    # cell 1 unit 1: 0 + 1/2 = 0.5 over 1/4 + 1/4 = 0.5 (all dyadic, so exact in binary)
    assert cs.cell.tolist() == [0, 1, 1]
    assert cs.num.tolist() == [0.75, 0.75, 0.5]
    assert cs.den.tolist() == [1.5, 1.0, 0.5]
    # weights omitted: one per observation
    cs1 = cluster_sums(cell, unit, num, None, 2)
    assert cs1.num.tolist() == [0.75, 0.75, 0.5] and cs1.den.tolist() == [2.0, 1.0, 2.0]


def test_ratio_ci_sums_float32_input_in_double() -> None:
    """x_ratio_ci__mutmut_4, _6, _13, _15: values (4, 6) and weights (13, 15) are made float64.

    float32 has a 24-bit significand: 2**24 + 1 rounds back to 2**24, so a float32 sum of
    [2**24, 1, 1] is 2**24 while the true sum is 2**24 + 2 = 16777218.
    """
    big = np.array([2.0**24, 1.0, 1.0], dtype=np.float32)
    # pooled mean: 16777218 / 3 = 5592406 exactly (float32 arithmetic gives 5592405.5)
    assert ratio_ci(big, n_boot=20).estimate == 5592406.0
    # as weights: 3 / 16777218 (float32 arithmetic gives 3 / 16777216)
    est = ratio_ci(np.array([0.0, 0.0, 3.0]), big, n_boot=20).estimate
    assert est == 3 / 16777218
