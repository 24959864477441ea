"""Paired tests: exact McNemar, Holm, TOST / non-inferiority decisions and their p-values."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy import stats

from pytest_agentfloor.stats import holm, mcnemar_exact
from pytest_agentfloor.stats import paired_compare as _paired_compare
import math
from scipy.stats import norm
from pytest_agentfloor.stats.bootstrap import resample_weights
from pytest_agentfloor.stats import build_table, compare_to_reference
from pytest_agentfloor.stats.paired import INSUFFICIENT


def paired_compare(*args, **kw):
    """These tests pin the plain bootstrap and the textbook one-sided 95% decisions; the guarded
    default is covered in test_stats_guarded.py."""
    kw.setdefault("interval_method", "paper")
    kw.setdefault("decision", "one-sided")
    return _paired_compare(*args, **kw)


# ---- exact McNemar -----------------------------------------------------------------------------

def exact_mcnemar_by_counting(b: int, c: int) -> Fraction:
    """Independent of scipy: under H0 the discordant pairs split Binomial(b + c, 1/2), which is
    symmetric, so the two-sided exact p is twice the smaller tail, counted in whole numbers."""
    n = b + c
    tail = sum(comb(n, k) for k in range(min(b, c) + 1))
    return min(Fraction(1), Fraction(2 * tail, 2**n))


@pytest.mark.parametrize("b", range(0, 16))
@pytest.mark.parametrize("c", range(0, 16, 3))
def test_mcnemar_matches_exact_binomial_counting(b: int, c: int) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(float(exact_mcnemar_by_counting(b, c)), rel=1e-12, abs=0)


@pytest.mark.parametrize(("b", "c", "p"), [
    (1, 8, 0.0390625),     # 2 * (1 + 8) / 2**9
    (0, 10, 0.001953125),  # 2 / 2**10
    (4, 0, 0.125),         # 2 / 2**4
    (3, 3, 1.0),
    (0, 0, 1.0),           # no discordant pairs: nothing to test
])
def test_mcnemar_hand_values(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=1e-12)


# ---- Holm ----------------------------------------------------------------------------------------

def test_holm_hand_worked() -> None:
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.02, 0.03, 0.06, 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02], atol=1e-15)
    np.testing.assert_allclose(holm([0.5, 0.6]), [1.0, 1.0])  # capped at 1
    np.testing.assert_allclose(holm([0.02, 0.02, 0.9]), [0.06, 0.06, 0.9])  # ties
    np.testing.assert_allclose(holm([0.2]), [0.2])
    assert holm([]).size == 0


def test_holm_is_not_bh_and_is_more_conservative() -> None:
    p = np.random.default_rng(2).random(30) ** 3
    adj = holm(p)
    bh = stats.false_discovery_control(p, method="bh")
    assert np.all(adj >= bh - 1e-15) and np.any(adj > bh + 1e-9)
    assert np.all(adj >= p) and np.all(adj <= np.minimum(1, p * p.size) + 1e-15)
    order = np.argsort(p)
    assert np.all(np.diff(adj[order]) >= 0)


def test_holm_rejects_bad_input() -> None:
    message = r"p-values must be in \[0, 1\] and not NaN"
    for bad in ([0.1, float("nan")], [1.2], [-0.01, 0.5]):
        with pytest.raises(ValueError, match=message):
            holm(bad)


def test_holm_accepts_the_ends_of_the_unit_interval() -> None:
    # m = 3, sorted 0, 0.2, 1: 3*0 = 0, 2*0.2 = 0.4, min(1, 1*1) = 1
    np.testing.assert_allclose(holm([1.0, 0.0, 0.2]), [1.0, 0.0, 0.4])


# ---- TOST / non-inferiority ------------------------------------------------------------------------

def _pairs(n_pos: int, n_neg: int, n_zero: int, zero_pass: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Aligned pass arrays with the given counts of d = +1, -1 and 0."""
    pm = np.r_[np.ones(n_pos), np.zeros(n_neg), np.full(n_zero, float(zero_pass))].astype(bool)
    pr = np.r_[np.zeros(n_pos), np.ones(n_neg), np.full(n_zero, float(zero_pass))].astype(bool)
    return pm, pr


def test_identical_models_are_equivalent() -> None:
    pm = np.array([1, 0, 1, 1, 0, 1, 0, 0, 1, 1], bool)
    t = paired_compare(pm, pm.copy(), n_boot=10_000)
    assert (t.delta_pp, t.ci90_low_pp, t.ci90_high_pp, t.ci95_low_pp, t.ci95_high_pp) == (0, 0, 0, 0, 0)
    assert t.equivalent and t.noninferior
    assert t.p_noninferiority == t.p_equivalence == 1e-4  # floored at 1/B
    assert (t.mcnemar_b, t.mcnemar_c, t.p_mcnemar) == (0, 0, 1.0)
    assert t.tcr_model == t.tcr_ref == 0.6


def test_model_strictly_better_is_noninferior_not_equivalent() -> None:
    pm, pr = _pairs(20, 0, 0)
    t = paired_compare(pm, pr)
    assert t.delta_pp == 100.0 and t.ci95_low_pp == 100.0
    assert t.noninferior and not t.equivalent
    assert t.p_equivalence == 1.0
    assert (t.mcnemar_b, t.mcnemar_c) == (20, 0)
    assert t.p_mcnemar == pytest.approx(2 * 0.5**20)


def test_noninferiority_p_matches_resampling_law() -> None:
    # 2 of 10 pairs at d=-1: delta* = -10 pp * Binomial(10, 0.2); P(delta* <= -10) = 1 - 0.8**10.
    pm, pr = _pairs(0, 2, 8)
    t = paired_compare(pm, pr, margin_pp=10)
    assert t.delta_pp == -20.0
    assert t.p_noninferiority == pytest.approx(1 - 0.8**10, abs=0.015)
    assert not t.noninferior and not t.equivalent


def test_tie_at_margin_counts_against_noninferiority() -> None:
    # Observed delta is exactly -m; P(delta* <= -10) = 1 - 0.9**10 ~ 0.651 (ties included).
    pm, pr = _pairs(0, 1, 9)
    t = paired_compare(pm, pr, margin_pp=10)
    assert t.delta_pp == -10.0
    assert t.p_noninferiority == pytest.approx(1 - 0.9**10, abs=0.015)
    assert not t.noninferior


def test_small_difference_on_many_pairs_is_equivalent() -> None:
    # delta = +5 pp on 500 pairs (25 wins, 0 losses): delta* = 100 * Binomial(500, 0.05) / 500.
    pm, pr = _pairs(25, 0, 475)
    t = paired_compare(pm, pr, margin_pp=10)
    lo90 = 100 * stats.binom.ppf(0.05, 500, 0.05) / 500
    hi90 = 100 * stats.binom.isf(0.05, 500, 0.05) / 500
    assert abs(t.ci90_low_pp - lo90) <= 0.2 + 1e-9 and abs(t.ci90_high_pp - hi90) <= 0.2 + 1e-9
    assert t.equivalent and t.noninferior
    assert t.p_equivalence == pytest.approx(stats.binom.sf(49, 500, 0.05), abs=0.005)  # P(delta* >= 10)


def test_large_gain_is_noninferior_but_not_equivalent() -> None:
    pm, pr = _pairs(75, 0, 425)  # +15 pp
    t = paired_compare(pm, pr, margin_pp=10)
    assert t.noninferior and not t.equivalent


def test_noisy_small_loss_is_inconclusive() -> None:
    pm, pr = _pairs(2, 4, 34)  # delta = -5 pp, sd of delta* ~ 6 pp
    t = paired_compare(pm, pr, margin_pp=10)
    assert t.delta_pp == -5.0
    assert not t.noninferior and not t.equivalent
    assert t.ci90_low_pp < -10 < t.ci95_high_pp


@pytest.mark.parametrize("seed", range(8))
def test_decisions_equal_interval_rules(seed: int) -> None:
    """noninferior <=> 90% lower bound > -m; equivalent <=> 90% CI inside (-m, m) (margin avoids exact ties)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 120))
    pm = rng.random(n) < rng.uniform(0.3, 0.9)
    pr = rng.random(n) < rng.uniform(0.3, 0.9)
    unit = rng.integers(0, max(2, n // 4), n)
    m = 7.3
    t = paired_compare(pm, pr, unit, margin_pp=m, n_boot=4000, seed=seed)
    assert t.noninferior == (t.ci90_low_pp > -m)
    assert t.equivalent == (t.ci90_low_pp > -m and t.ci90_high_pp < m)
    assert t.noninferior == (t.p_noninferiority < 0.05)
    assert t.equivalent == (t.p_equivalence < 0.05)
    assert t.ci95_low_pp <= t.ci90_low_pp <= t.delta_pp + 1e-9 or t.n_units < 3
    assert t.n_units == np.unique(unit).size


def test_empty_pairs_are_defined() -> None:
    t = paired_compare(np.array([], bool), np.array([], bool))
    assert t.n_pairs == 0 and t.delta_pp is None and t.p_noninferiority is None
    assert not t.noninferior and not t.equivalent and t.p_mcnemar == 1.0


def test_misaligned_pairs_raise() -> None:
    with pytest.raises(ValueError):
        paired_compare(np.ones(3, bool), np.ones(4, bool))


def test_holm_claims_at_an_exact_tie_with_the_level_count_against_the_claim() -> None:
    """'p < alpha' is the interval's own decision (a bound exactly on the margin does not clear it),
    so an adjusted p exactly at the level is no claim; a hair below it is."""
    from pytest_agentfloor.stats.paired import PairedTest, apply_holm

    def test(p: float) -> PairedTest:
        return PairedTest(model="m", reference="r", scope="A", n_pairs=40, n_unpaired_model=0, n_unpaired_ref=0,
                          n_units=40, tcr_model=0.9, tcr_ref=0.9, delta_pp=0.0, ci95_low_pp=-5.0, ci95_high_pp=5.0,
                          ci90_low_pp=-4.0, ci90_high_pp=4.0, margin_pp=10.0, p_noninferiority=p, p_equivalence=p,
                          noninferior=True, equivalent=True, mcnemar_b=0, mcnemar_c=0, p_mcnemar=1.0)

    # two tests at p = 0.0125: Holm gives 2 x 0.0125 = 0.025 for both, exactly alpha/2 (two-sided reading)
    tied = apply_holm([test(0.0125), test(0.0125)], "model_tier", 0.05)
    assert [t.p_noninferiority_holm for t in tied] == [0.025, 0.025]
    assert [(t.noninferior_holm, t.equivalent_holm) for t in tied] == [(False, False), (False, False)]
    # 2 x 0.0124 = 0.0248 just clears 0.025; the second's max(0.0248, 1 x 0.03) = 0.03 does not
    below = apply_holm([test(0.0124), test(0.03)], "model_tier", 0.05)
    assert [t.p_noninferiority_holm for t in below] == pytest.approx([0.0248, 0.03])
    assert [(t.noninferior_holm, t.equivalent_holm) for t in below] == [(True, True), (False, False)]


# -- paired_compare at its edges (the mutation run's survivors) ------------------------------------
# paired_compare pinned where mutation testing found it unpinned (issue 20, stats survivors).
#
# Every expected value is worked by hand from a documented formula (Tango's score statistic in
# closed form, the order-statistic bootstrap of :mod:`pytest_agentfloor.stats.bootstrap`) and
# evaluated with scipy/numpy, never with the function under test. Each test names the mutants
# (``x_<function>__mutmut_<n>`` from the mutmut run) it kills.


# 30 concordant pairs (18 both pass, 12 both fail): no discordant pair, so every bootstrap
# replicate of the mean difference is 0 and the guarded interval is Tango's alone.
CONCORDANT = [True] * 18 + [False] * 12


def tango_no_discordant(n: int, tail: float) -> float:
    """Half-width of Tango's interval when b = c = 0: ``z^2 / (n + z^2)`` (intervals.py docstring).

    By hand from Z(d0) = (b - c - n d0) / sqrt(n (2 q + d0 (1 - d0))): with b = c = 0 the
    restricted MLE is q = -d0 for d0 < 0, so Z(-m) = sqrt(n m / (1 - m)); |Z| = z at m = z^2 / (n + z^2).
    """
    z2 = norm.isf(tail) ** 2
    return z2 / (n + z2)


def test_guarded_bounds_without_discordant_pairs_are_tangos_at_each_level() -> None:
    """x__paired_cells__mutmut_78, 80, 81, 82, 93, 94, 100, 101, 109, 110, 116: the guarded 95 %
    and 90 % intervals are the hull of the collapsed bootstrap ([0, 0]) and Tango's interval at
    tail alpha/2 and alpha.

    n = 30, z(0.025)^2 = 3.8414588 -> 3.8414588 / 33.8414588 = 0.1135134 (11.35 pp);
    z(0.05)^2 = 2.7055435 -> 2.7055435 / 32.7055435 = 0.0827243 (8.27 pp).
    """
    t = _paired_compare(CONCORDANT, CONCORDANT, n_boot=200)
    w95, w90 = 100 * tango_no_discordant(30, 0.025), 100 * tango_no_discordant(30, 0.05)
    assert w95 == pytest.approx(11.35134, abs=1e-5) and w90 == pytest.approx(8.27243, abs=1e-5)
    # mutmut_78 (alpha/3), 93 (100 / t95[0]), 94 (101 *), 100 (100 / t95[1]), 101 (101 *)
    assert t.ci95_low_pp == pytest.approx(-w95, rel=1e-9)
    assert t.ci95_high_pp == pytest.approx(w95, rel=1e-9)
    # mutmut_80/81/82 (None for b, c or n: NaN, so fmin/fmax keep the bootstrap's 0), 109, 110 (the
    # upper end as the lower: fmin(0, +8.27) = 0), 116
    assert t.ci90_low_pp == pytest.approx(-w90, rel=1e-9)
    assert t.ci90_high_pp == pytest.approx(w90, rel=1e-9)
    # the bootstrap's own interval collapsed to the point, as the hull's construction assumes
    assert (t.boot_ci95_low_pp, t.boot_ci95_high_pp, t.delta_pp) == (0.0, 0.0, 0.0)


def test_score_pvalue_at_the_margin_and_the_one_sided_decision() -> None:
    """x__paired_cells__mutmut_128 (score p at margin/101), x_paired_compare__mutmut_135 (decision
    not passed on): with b = c = 0, the score p for H0: delta <= -m is 1 - Phi(sqrt(n m / (1 - m))).

    n = 30, m = 0.1: sqrt(30 * 0.1 / 0.9) = 1.8257419, p = 0.0339446. The bootstrap p is 0 (every
    replicate is 0 > -10 pp), so the score p is the reported one; by symmetry the upper test has
    the same p. It lies between alpha/2 = 0.025 and alpha = 0.05: the one-sided 95 % reading
    certifies, the two-sided one does not, and 30 pairs are below the two-sided minimum
    floor(3.8414588 * 0.9 / 0.1) + 1 = 35 (one-sided: floor(2.7055435 * 9) + 1 = 25).
    """
    p = float(norm.sf(math.sqrt(30 * 0.1 / 0.9)))
    assert p == pytest.approx(0.0339446, abs=1e-7)
    one = _paired_compare(CONCORDANT, CONCORDANT, n_boot=200, decision="one-sided")
    assert one.p_noninferiority == pytest.approx(p, rel=1e-9)  # mutmut_128
    assert one.p_equivalence == pytest.approx(p, rel=1e-9)
    # mutmut_135: without decision=, _make_test would judge at alpha/2 and report "two-sided"
    assert one.decision == "one-sided" and one.n_min_pairs == 25
    assert one.noninferior and one.equivalent
    assert (one.noninferiority_verdict, one.equivalence_verdict) == ("yes", "yes")
    two = _paired_compare(CONCORDANT, CONCORDANT, n_boot=200)
    assert two.decision == "two-sided" and two.n_min_pairs == 35
    assert not two.noninferior and not two.equivalent
    assert two.noninferiority_verdict == "insufficient evidence"


def test_paper_method_is_reported_and_keeps_the_bootstrap_alone() -> None:
    """x_paired_compare__mutmut_134: interval_method not passed on to _make_test would report
    "guarded" and its minimum of 35 pairs; the plain bootstrap needs one pair (a table without
    discordant pairs has a zero-width interval), and here every replicate is 0, so the interval
    is [0, 0] and the bootstrap p-values (no replicate at or beyond +-10 pp) are floored at 1/B.
    """
    t = _paired_compare(CONCORDANT, CONCORDANT, n_boot=200, interval_method="paper")
    assert t.interval_method == "paper" and t.n_min_pairs == 1
    assert (t.ci95_low_pp, t.ci95_high_pp, t.ci90_low_pp, t.ci90_high_pp) == (0.0, 0.0, 0.0, 0.0)
    assert t.p_noninferiority == t.p_equivalence == 1 / 200
    assert t.noninferior and t.equivalent and t.noninferiority_verdict == "yes"


@pytest.mark.parametrize(("pm", "pr", "delta", "tcr_m", "tcr_r", "b", "c"), [
    ([True], [False], 100.0, 1.0, 0.0, 1, 0),
    ([False], [True], -100.0, 0.0, 1.0, 0, 1),
    ([True], [True], 0.0, 1.0, 1.0, 0, 0),
])
def test_a_single_pair_has_its_estimates(pm, pr, delta, tcr_m, tcr_r, b, c) -> None:
    """x__paired_cells__mutmut_208, 219, 228: ``n > 1`` for ``n > 0`` would report one pair's
    delta and rates as missing. One pair: delta = 100 * (pass_m - pass_r), rates 0 or 1."""
    t = _paired_compare(pm, pr, n_boot=50)
    assert t.n_pairs == 1 and (t.mcnemar_b, t.mcnemar_c) == (b, c)
    assert t.delta_pp == delta  # mutmut_208
    assert t.tcr_model == tcr_m  # mutmut_219
    assert t.tcr_ref == tcr_r  # mutmut_228


def test_bootstrap_interval_is_the_documented_order_statistics() -> None:
    """x__paired_cells__mutmut_230: the reported bootstrap interval's low end is the k-th smallest
    replicate, not the high end. Worked independently from the documented draw (bootstrap.py):
    replicate b draws W[b] of each pair (every pair its own unit, ascending unit order), the
    replicate is 100 * sum(W d) / sum(W), and with B = 400, k = ceil(0.025 * 400) = 10.
    """
    pm = [True] * 6 + [False] * 2 + [True] * 7 + [False] * 5
    pr = [False] * 6 + [True] * 2 + [True] * 7 + [False] * 5  # b = 6, c = 2, n = 20, delta = 20 pp
    d = np.array(pm, float) - np.array(pr, float)
    w = resample_weights(20, 400, 7)
    reps = np.sort(100.0 * (w @ d) / w.sum(axis=1))
    lo, hi = reps[10 - 1], reps[400 - 10]
    assert lo < 20.0 < hi
    t = _paired_compare(pm, pr, n_boot=400, seed=7)
    assert t.delta_pp == pytest.approx(20.0, abs=1e-12)
    assert t.boot_ci95_low_pp == pytest.approx(lo, abs=1e-9)
    assert t.boot_ci95_high_pp == pytest.approx(hi, abs=1e-9)


def test_bootstrap_pvalues_count_replicates_within_the_tie_tolerance_against_the_claim() -> None:
    """x__paired_cells__mutmut_47, 58: ties count against the claim, and a replicate within the
    1e-9 pp tie tolerance of the margin is a tie (the band is closed: ``<= tol``, ``>= -tol``).

    Margin 1e-9 pp, d = (+1, 0, 0, 0) each its own unit: a replicate's sum of d is the number of
    draws of pair 0, never negative. A replicate that misses pair 0 has delta* = 0, exactly
    ``-m + 1e-9`` and ``+m - 1e-9``, so it counts in both p-values: p_lower = P(pair 0 not
    drawn), p_upper = 1 (every replicate has delta* >= 0). Plain bootstrap, so no score p enters.
    """
    pm, pr = [True, True, False, True], [False, True, False, True]
    w = resample_weights(4, 500, 3)
    missed = float(np.mean(w[:, 0] == 0))  # about (3/4)^4 = 0.316
    assert 0.2 < missed < 0.45
    t = _paired_compare(pm, pr, n_boot=500, seed=3, margin_pp=1e-9, interval_method="paper")
    assert t.p_noninferiority == pytest.approx(missed, abs=1e-12)  # mutmut_47: the ties dropped, 1/B
    assert t.p_equivalence == 1.0  # mutmut_58: max(missed, 1 - missed) instead
    assert not t.noninferior and not t.equivalent


def test_upper_pvalue_compares_100_times_the_sum_with_the_margin() -> None:
    """x__paired_cells__mutmut_56 (101 * s_num in p_upper): 10 pairs in one unit, one of them
    discordant for the model (d = +1), so every replicate redraws the same unit and delta* = 10 pp.
    At margin 10.05 pp: 10 < 10.05, so no replicate is >= +m (p_upper = 0, floored to 1/B) and
    none is <= -m; equivalence holds. (101 * 1 - 10.05 * 10 = +0.5 >= 0 would count every one.)
    """
    pm, pr = [True] + [True] * 9, [False] + [True] * 9
    t = _paired_compare(pm, pr, [0] * 10, n_boot=100, margin_pp=10.05, interval_method="paper")
    assert t.n_units == 1 and t.delta_pp == pytest.approx(10.0, abs=1e-12)
    assert (t.ci95_low_pp, t.ci95_high_pp) == pytest.approx((10.0, 10.0), abs=1e-12)
    assert t.p_equivalence == 1 / 100
    assert t.equivalent


def test_an_empty_comparison_warns_nothing_and_reports_no_estimates() -> None:
    """x__paired_cells__mutmut_153 (``n >= 0`` in the divisor guard): an empty cell would divide
    0 by 0, and numpy's RuntimeWarning would reach the user's pytest output."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = _paired_compare([], [], n_boot=20)
    assert t.n_pairs == 0 and t.n_units == 0
    assert (t.delta_pp, t.tcr_model, t.tcr_ref, t.ci95_low_pp, t.p_noninferiority) == (None,) * 5


# -- paired tests and Holm at their edges (the mutation run's survivors) ---------------------------
# Paired tests and Holm: what the mutation run showed no test pinned.
#
# Every expected value is worked by hand in a comment, from the documented resampling draw written
# out with numpy, or from the closed form of Tango's interval with no discordant pair
# (``±z² / (n + z²)``, z from scipy); none comes from the function under test.


Z975_SQ = norm.ppf(0.975) ** 2  # 3.8415, the two-sided 95 % reading: each one-sided test at 2.5 %


Z95_SQ = norm.ppf(0.95) ** 2    # 2.7055, the one-sided reading: each test at 5 %


def _rec(model: str, task: str, tier: str, passed: bool) -> dict:
    return dict(model=model, task=task, tier=tier, variant="v", instance="i", run=0, passed=passed)


def _agreeing_table(n_a: int, n_b: int) -> list[dict]:
    """``ref`` and ``m`` both pass ``n_a`` tasks of tier A and ``n_b`` of tier B (no discordant pair)."""
    out = []
    for tier, n in (("A", n_a), ("B", n_b)):
        for k in range(n):
            out += [_rec("ref", f"{tier}{k}", tier, True), _rec("m", f"{tier}{k}", tier, True)]
    return out


def test_guarded_two_sided_needs_35_pairs_and_says_insufficient_below() -> None:
    """x__make_test__mutmut_80, x__make_test__mutmut_109: n_min_pairs is the guarded minimum, not None or the default 1.

    Hand: a table without discordant pairs has Tango's interval ±z²/(n + z²); inside ±10 pp iff
    n > z² (1 - 0.1) / 0.1 = 3.8415 * 9 = 34.57, so 35 pairs. On 20 agreeing pairs the interval is
    ±3.8415 / 23.8415 = ±16.1 pp: no claim, and 20 < 35 makes it "insufficient evidence".
    """
    t = _paired_compare(np.ones(20, bool), np.ones(20, bool), margin_pp=10, n_boot=200)
    assert t.n_min_pairs == 35
    assert t.ci95_low_pp == pytest.approx(-100 * Z975_SQ / (20 + Z975_SQ), abs=1e-6)
    assert not t.noninferior and not t.equivalent
    assert (t.noninferiority_verdict, t.equivalence_verdict) == (INSUFFICIENT, INSUFFICIENT)


def test_equivalence_established_on_enough_pairs_is_a_yes() -> None:
    """x__make_test__mutmut_187: the equivalence verdict follows the equivalence decision.

    Hand: 200 agreeing pairs, Tango ±3.8415 / 203.8415 = ±1.88 pp, inside ±10 pp: both claims hold.
    """
    t = _paired_compare(np.ones(200, bool), np.ones(200, bool), margin_pp=10, n_boot=200)
    assert t.ci95_high_pp == pytest.approx(100 * Z975_SQ / (200 + Z975_SQ), abs=1e-6)
    assert t.equivalent and t.noninferior
    assert (t.noninferiority_verdict, t.equivalence_verdict) == ("yes", "yes")


def test_paper_method_is_recorded_and_one_pair_can_certify() -> None:
    """x__make_test__mutmut_40, x__make_test__mutmut_43, x__make_test__mutmut_107: under "paper" the
    result says so and n_min_pairs is 1.

    Hand: 5 pairs where only the reference passes: delta* = -100 in every replicate, so p_lower = 1
    and no claim; with the paper minimum of 1 pair that is a plain "no" (the guarded minimum of 35
    would turn it into "insufficient evidence").
    """
    t = _paired_compare(np.zeros(5, bool), np.ones(5, bool), margin_pp=10, n_boot=200, interval_method="paper")
    assert t.interval_method == "paper"
    assert t.n_min_pairs == 1
    assert t.delta_pp == -100.0 and t.p_noninferiority == 1.0
    assert (t.noninferiority_verdict, t.equivalence_verdict) == ("no", "no")


def test_one_sided_decision_is_recorded_with_its_own_minimum() -> None:
    """x__make_test__mutmut_108: decision="one-sided" is carried into the result.

    Hand: each test at 5 %, n > 2.7055 * 9 = 24.35, so 25 pairs. 30 agreeing pairs: Tango's 90 %
    interval ±2.7055 / 32.7055 = ±8.27 pp is inside ±10 pp (the 95 % one, ±11.35 pp, is not).
    """
    t = _paired_compare(np.ones(30, bool), np.ones(30, bool), margin_pp=10, n_boot=200, decision="one-sided")
    assert t.decision == "one-sided"
    assert t.n_min_pairs == 25
    assert t.ci90_low_pp == pytest.approx(-100 * Z95_SQ / (30 + Z95_SQ), abs=1e-6)
    assert (t.noninferiority_verdict, t.equivalence_verdict) == ("yes", "yes")


def test_bootstrap_p_exactly_at_the_level_is_no_claim() -> None:
    """x__make_test__mutmut_47, x__make_test__mutmut_55: a claim needs p < alpha/2; p exactly at it counts against.

    20 pairs, pair 0 has d = -1, the rest d = 0 (delta = -5 pp). Each pair is its own unit, so by the
    documented draw replicate b draws pair 0 ``K_b`` times, K_b = #{j: idx[b, j] == 0} for
    idx = default_rng(13).integers(0, 20, size=(200, 20)), and delta*_b = -5 K_b pp. At m = 20 pp,
    delta* <= -20 iff K_b >= 4; counted below, 5 of the 200 replicates: p_lower = 5/200 = 0.025,
    exactly alpha/2 for alpha = 0.05. No replicate reaches +20, so p_upper = 0 and the TOST p is
    0.025 as well. Neither claim holds; the 95 % lower bound (5th smallest replicate) is -20, on
    the margin, which does not clear it either.
    """
    n, n_boot, seed = 20, 200, 13
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    assert int(((idx == 0).sum(axis=1) >= 4).sum()) == 5  # the hand count the numbers below rest on
    pm = np.ones(n, bool)
    pm[0] = False
    t = _paired_compare(pm, np.ones(n, bool), margin_pp=20, n_boot=n_boot, seed=seed, alpha=0.05,
                       interval_method="paper")
    assert t.delta_pp == -5.0 and t.ci95_low_pp == -20.0
    assert t.p_noninferiority == 0.025 and t.p_equivalence == 0.025
    assert not t.noninferior  # x__make_test__mutmut_47: "<=" would claim non-inferiority at p == 0.025
    assert not t.equivalent  # x__make_test__mutmut_55: "<=" would claim equivalence at p == 0.025
    # not refuted either (the interval reaches above -20 pp): insufficient evidence, three outcomes
    assert (t.noninferiority_verdict, t.equivalence_verdict) == (INSUFFICIENT, INSUFFICIENT)
    # a hair more level and both claims hold (0.025 < 0.0251): the tie, not the data, decides above
    loose = _paired_compare(pm, np.ones(n, bool), margin_pp=20, n_boot=n_boot, seed=seed, alpha=0.0502,
                           interval_method="paper")
    assert loose.noninferior and loose.equivalent


def test_section_tests_carry_the_default_method_and_decision() -> None:
    """x_compare_to_reference__mutmut_271: each test says "guarded" / "two-sided" like its section.

    Hand (guarded, two-sided, n_min 35): tier A 40 agreeing pairs, Tango ±3.8415/43.8415 = ±8.76 pp:
    yes; tier B 10 pairs, ±27.8 pp and 10 < 35: insufficient evidence; overall 50 pairs: yes.
    """
    s = compare_to_reference(build_table(_agreeing_table(40, 10)), "ref", margin_pp=10, n_boot=200, seed=1,
                             cluster="run", infra_as_failure=False)
    assert (s.interval_method, s.decision, s.n_min_pairs) == ("guarded", "two-sided", 35)
    tests = s.tests["m"]
    assert sorted(tests) == ["A", "B", "overall"]
    for t in tests.values():
        assert (t.interval_method, t.decision, t.n_min_pairs) == ("guarded", "two-sided", 35)
    assert tests["A"].ci95_low_pp == pytest.approx(-100 * Z975_SQ / (40 + Z975_SQ), abs=1e-6)
    assert {sc: t.equivalence_verdict for sc, t in tests.items()} == {"A": "yes", "B": INSUFFICIENT,
                                                                      "overall": "yes"}


def test_section_under_the_paper_method() -> None:
    """x_compare_to_reference__mutmut_35, x_compare_to_reference__mutmut_38,
    x_compare_to_reference__mutmut_283: the section's and each test's n_min_pairs is 1
    under "paper", and each test records the method.

    Hand: the plain bootstrap of agreeing pairs is the single point 0, so every scope is certified,
    tier B's 10 pairs included.
    """
    s = compare_to_reference(build_table(_agreeing_table(40, 10)), "ref", margin_pp=10, n_boot=200, seed=1,
                             cluster="run", infra_as_failure=False, interval_method="paper")
    assert (s.interval_method, s.n_min_pairs) == ("paper", 1)
    for t in s.tests["m"].values():
        assert (t.interval_method, t.n_min_pairs) == ("paper", 1)
        assert (t.ci95_low_pp, t.ci95_high_pp) == (0.0, 0.0)
        assert t.equivalence_verdict == "yes"


def test_section_under_the_one_sided_decision() -> None:
    """x_compare_to_reference__mutmut_284: each test records decision="one-sided" and is judged by it.

    Hand (n_min 25): tier A 30 pairs, ±2.7055/32.7055 = ±8.27 pp: yes (two-sided would be ±11.35 pp
    and insufficient); tier B 10 pairs: insufficient (10 < 25); overall 40 pairs: yes.
    """
    s = compare_to_reference(build_table(_agreeing_table(30, 10)), "ref", margin_pp=10, n_boot=200, seed=1,
                             cluster="run", infra_as_failure=False, decision="one-sided")
    assert (s.decision, s.n_min_pairs) == ("one-sided", 25)
    tests = s.tests["m"]
    for t in tests.values():
        assert (t.decision, t.n_min_pairs) == ("one-sided", 25)
    assert {sc: t.noninferiority_verdict for sc, t in tests.items()} == {"A": "yes", "B": INSUFFICIENT,
                                                                         "overall": "yes"}


def test_last_model_without_pairs_and_a_single_pair_overall() -> None:
    """x_compare_to_reference__mutmut_234, x_compare_to_reference__mutmut_242,
    x_compare_to_reference__mutmut_250, x_compare_to_reference__mutmut_256 (every cell keeps its slot
    when the last cells have no pairs), x_compare_to_reference__mutmut_327 and
    x_compare_to_reference__mutmut_328 (a family counts the tests with at least one pair).

    Models sort as m, ref, z, so z's cells come last. Hand:
      ref: t1 (A) pass, t2 (B) pass;  m: t1 (A) pass;  z: t9 (B) fail (no counterpart).
      m: A 1 pair, B 0 pairs (ref's t2 unpaired), overall 1 pair (1 ref run unpaired).
      z: no pair anywhere; A: ref's t1 unpaired; B: z's t9 and ref's t2; overall 1 and 2.
      Families: model_tier = {m/A} -> 1, model_overall = {m} -> 1 (z has no pair, m exactly one).
    """
    recs = [_rec("ref", "t1", "A", True), _rec("ref", "t2", "B", True), _rec("m", "t1", "A", True),
            _rec("z", "t9", "B", False)]
    s = compare_to_reference(build_table(recs), "ref", margin_pp=10, n_boot=200, seed=1, cluster="unit",
                             infra_as_failure=False)
    got = {(mod, sc): (t.n_pairs, t.n_unpaired_model, t.n_unpaired_ref, t.tcr_model, t.delta_pp)
           for mod, d in s.tests.items() for sc, t in d.items()}
    assert got == {
        ("m", "A"): (1, 0, 0, 1.0, 0.0), ("m", "B"): (0, 0, 1, None, None), ("m", "overall"): (1, 0, 1, 1.0, 0.0),
        ("z", "A"): (0, 0, 1, None, None), ("z", "B"): (0, 1, 1, None, None), ("z", "overall"): (0, 1, 2, None, None),
    }
    assert s.family_sizes == {"model_tier": 1, "model_overall": 1}
    z = s.tests["z"]["overall"]
    assert (z.mcnemar_b, z.mcnemar_c, z.p_mcnemar, z.p_noninferiority, z.holm_family) == (0, 0, 1.0, None, None)


def test_holm_rejects_a_missing_p_value_with_its_own_message() -> None:
    """x_holm__mutmut_3, x_holm__mutmut_5: a missing p-value (None, as a test without pairs carries) is read as
    NaN and refused with the clear message, not a numpy TypeError from an object array."""
    with pytest.raises(ValueError, match=r"p-values must be in \[0, 1\] and not NaN"):
        holm([0.01, None])


def test_reference_alone_gives_an_empty_available_section() -> None:
    """With no other model there is nothing to pair: the section is available, holds no test and
    both families are empty. (Also runs the empty fallbacks of the pairing arrays, whose dtype
    does not matter: see the equivalent survivors of compare_to_reference in docs/testing.md.)"""
    s = compare_to_reference(build_table([_rec("ref", "t1", "A", True)]), "ref", margin_pp=10, n_boot=20, seed=1,
                             cluster="unit", infra_as_failure=False)
    assert (s.available, s.reason, s.tests, s.family_sizes) == (True, None, {}, {"model_tier": 0, "model_overall": 0})
