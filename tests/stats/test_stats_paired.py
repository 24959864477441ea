"""Paired tests: exact McNemar, Holm, TOST / non-inferiority decisions and their p-values."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy import stats

from pytest_agentfloor.stats import holm, mcnemar_exact
from pytest_agentfloor.stats import paired_compare as _paired_compare


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
