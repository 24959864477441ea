"""paired_compare pinned where mutation testing found it unpinned (issue 20, stats survivors).

Every expected value is worked by hand from a documented formula (Tango's score statistic in
closed form, the order-statistic bootstrap of :mod:`pytest_agentfloor.stats.bootstrap`) and
evaluated with scipy/numpy, never with the function under test. Each test names the mutants
(``x_<function>__mutmut_<n>`` from the mutmut run) it kills.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from pytest_agentfloor.stats import paired_compare
from pytest_agentfloor.stats.bootstrap import resample_weights

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
    t = paired_compare(CONCORDANT, CONCORDANT, n_boot=200)
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
    one = paired_compare(CONCORDANT, CONCORDANT, n_boot=200, decision="one-sided")
    assert one.p_noninferiority == pytest.approx(p, rel=1e-9)  # mutmut_128
    assert one.p_equivalence == pytest.approx(p, rel=1e-9)
    # mutmut_135: without decision=, _make_test would judge at alpha/2 and report "two-sided"
    assert one.decision == "one-sided" and one.n_min_pairs == 25
    assert one.noninferior and one.equivalent
    assert (one.noninferiority_verdict, one.equivalence_verdict) == ("yes", "yes")
    two = paired_compare(CONCORDANT, CONCORDANT, n_boot=200)
    assert two.decision == "two-sided" and two.n_min_pairs == 35
    assert not two.noninferior and not two.equivalent
    assert two.noninferiority_verdict == "insufficient evidence"


def test_paper_method_is_reported_and_keeps_the_bootstrap_alone() -> None:
    """x_paired_compare__mutmut_134: interval_method not passed on to _make_test would report
    "guarded" and its minimum of 35 pairs; the plain bootstrap needs one pair (a table without
    discordant pairs has a zero-width interval), and here every replicate is 0, so the interval
    is [0, 0] and the bootstrap p-values (no replicate at or beyond +-10 pp) are floored at 1/B.
    """
    t = paired_compare(CONCORDANT, CONCORDANT, n_boot=200, interval_method="paper")
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
    t = paired_compare(pm, pr, n_boot=50)
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
    t = paired_compare(pm, pr, n_boot=400, seed=7)
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
    t = paired_compare(pm, pr, n_boot=500, seed=3, margin_pp=1e-9, interval_method="paper")
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
    t = paired_compare(pm, pr, [0] * 10, n_boot=100, margin_pp=10.05, interval_method="paper")
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
        t = paired_compare([], [], n_boot=20)
    assert t.n_pairs == 0 and t.n_units == 0
    assert (t.delta_pp, t.tcr_model, t.tcr_ref, t.ci95_low_pp, t.p_noninferiority) == (None,) * 5
