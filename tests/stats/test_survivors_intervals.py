"""Score intervals and p-values at the edges the other stats tests do not reach (mutation survivors).

Each test names, in its docstring or next to its assert, the mutants of ``stats/intervals.py`` it
kills. Expected values are closed forms worked by hand (below) or scipy's normal quantiles, never
the function under test:

* Wilson with ``k = n``: ``centre ± half = (n + z²/2 ± z²/2) / (n + z²)``, so the interval is
  ``[n / (n + z²), 1]`` exactly.
* Tango with every pair discordant one way (``b = 0, c = n``): the constrained MLE solves
  ``2q² + (3Δ0 - 1) q - Δ0 (1 - Δ0) = 0``, whose discriminant is ``(1 + Δ0)²``, so
  ``q = (1 - Δ0) / 2``, the variance is ``n (1 - Δ0²)`` and ``Z(Δ0) = -sqrt(n (1 + Δ0) / (1 - Δ0))``.
  ``|Z| <= z`` gives the interval ``[-1, (z² - n) / (z² + n)]``; ``b = n, c = 0`` is its mirror.
* The minimum number of pairs: the best table's interval is ``±z²/(n + z²)``, inside the margin
  ``m`` iff ``n > z² (1 - m) / m``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from pytest_agentfloor.stats.intervals import min_pairs_to_certify, tango, tango_pvalues, wilson

Z2 = {t: stats.norm.isf(t) ** 2 for t in (0.025, 0.05)}


@pytest.fixture
def no_numpy_warnings():
    """Turn every warning into an error: a RuntimeWarning from numpy would land in the user's pytest output."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# --- Wilson ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tail", [0.025, 0.05])
def test_wilson_all_passed_is_n_over_n_plus_z2_to_exactly_one(tail: float) -> None:
    """x_wilson__mutmut_82, x_wilson__mutmut_88: without the ``k >= n`` branch (or with ``k > n``) the upper
    bound of 14/14, 16/16, 24/24, ... (95 %) or 6/6, 7/7, 12/12, ... (90 %) comes out as 0.9999999999999999."""
    n = np.arange(1, 61)
    lo, hi = wilson(n, n, tail)
    assert np.all(hi == 1.0)  # exactly: every run passed, nothing above 100 % is possible
    np.testing.assert_allclose(lo, n / (n + Z2[tail]), rtol=1e-12)  # 5/5 at 95 %: 5 / (5 + 3.8415) = 56.55 %
    for k in (1, 6, 7, 14, 16, 60):  # the scalar path callers use (stats.judge, stats.instances)
        assert wilson(k, k, tail)[1] == 1.0


# --- Tango: every pair discordant one way ---------------------------------------------------------------------

ONE_WAY_N = [1, 2, 5, 30, 60, 999, 1000, 1001, 1003, 5000]


@pytest.mark.parametrize("tail", [0.025, 0.05])
@pytest.mark.usefixtures("no_numpy_warnings")
def test_tango_reference_only_pairs_reach_minus_one_exactly(tail: float) -> None:
    """The model lost every pair the reference won (b = 0, c = n): Δ̂ = -1 and the interval is
    ``[-1, (z² - n)/(z² + n)]`` (module docstring), the lower end exactly -1.

    x_tango__mutmut_98 (check dropped), x_tango__mutmut_118 (probed at -2 + 1e-12) and x_tango__mutmut_116
    (probed at -1 - 1e-12, outside [-1, 1]: from 1,001 pairs the probe's numerator passes 1e-9 and Z
    turns infinite) leave the bisection's -0.999999999999; x_tango__mutmut_120 / _121 put +1 / -2 there.
    x__tango_z__mutmut_21 (discriminant not clipped at 0) takes the square root of a rounding error
    below 0 at Δ0 = -1 + 1e-12 and prints "invalid value encountered in sqrt"."""
    n = np.array(ONE_WAY_N, dtype=float)
    lo, hi = tango(np.zeros_like(n), n, n, tail)
    assert np.all(lo == -1.0)
    np.testing.assert_allclose(hi, (Z2[tail] - n) / (Z2[tail] + n), rtol=0, atol=1e-9)
    for k in (1, 5, 1001):  # plain integers, as a direct caller passes them
        assert tango(0, k, k, tail)[0][0] == -1.0


@pytest.mark.parametrize("tail", [0.025, 0.05])
@pytest.mark.usefixtures("no_numpy_warnings")
def test_tango_model_only_pairs_reach_plus_one_exactly(tail: float) -> None:
    """The mirror (b = n, c = 0): ``[(n - z²)/(n + z²), 1]``, the upper end exactly 1.

    x_tango__mutmut_123 (check dropped), x_tango__mutmut_142 (probed at 2 - 1e-12), x_tango__mutmut_144
    (compared with +z), x_tango__mutmut_141 (probed at 1 + 1e-12: wrong from 1,000 pairs) leave
    0.999999999999; x_tango__mutmut_145 puts 2 there."""
    n = np.array(ONE_WAY_N, dtype=float)
    lo, hi = tango(n, np.zeros_like(n), n, tail)
    assert np.all(hi == 1.0)
    np.testing.assert_allclose(lo, (n - Z2[tail]) / (n + Z2[tail]), rtol=0, atol=1e-9)
    for k in (1, 5, 1000):
        assert tango(k, 0, k, tail)[1][0] == 1.0


# --- Tango score p-values ------------------------------------------------------------------------------------

def _tango_q(b: float, c: float, n: float, d0: float) -> float:
    """Tango's constrained MLE of P(only the reference passes) under Δ = d0: the root in [0, 1] of
    ``2n q² + (-b - c + (2n - b + c) d0) q - c d0 (1 - d0) = 0`` (Tango 1998), via numpy's roots."""
    roots = np.roots([2 * n, -b - c + (2 * n - b + c) * d0, -c * d0 * (1 - d0)])
    real = [r.real for r in roots if abs(r.imag) < 1e-12 and -1e-12 <= r.real <= 1 + 1e-12]
    return max(real)


@pytest.mark.usefixtures("no_numpy_warnings")
def test_tango_pvalues_at_margin_zero_without_discordant_pairs() -> None:
    """No discordant pair and margin 0 (``--margin 0`` is allowed): the score is 0/0 at Δ0 = 0 = Δ̂, which the
    module defines as Z = 0, so both one-sided p-values are 1 - Φ(0) = Φ(0) = 0.5 exactly.

    x__tango_z__mutmut_81 (the 0/0 case sent to sign(0)·inf) gives NaN, x__tango_z__mutmut_90 (Z = 1 there)
    gives 1 - Φ(1) = 0.159 and Φ(1) = 0.841; x__tango_z__mutmut_55 / _57 (``invalid`` no longer ignored)
    print "invalid value encountered in multiply" for sign(0)·inf."""
    for n in (1, 10, 250):
        p_lo, p_hi = tango_pvalues(np.array([0.0]), np.array([0.0]), np.array([float(n)]), 0.0)
        assert (p_lo[0], p_hi[0]) == (0.5, 0.5)


@pytest.mark.usefixtures("no_numpy_warnings")
def test_tango_pvalues_when_the_estimate_sits_on_the_margin() -> None:
    """20 pairs, b = 3, c = 1: Δ̂ = +10 pp, exactly the margin. For H0: Δ >= +10 pp the numerator
    b - c - nΔ0 = 2 - 2 is 0 with a positive variance, so Z = 0 and p_upper = Φ(0) = 0.5 exactly.
    For H0: Δ <= -10 pp, by hand: q = (7.8 + sqrt(7.8² - 4·40·0.11)) / 80 = 0.17970, variance
    20 (2q - 0.1·1.1) = 4.98786, Z = 4 / 2.23335 = 1.79103, p_lower = 1 - Φ(1.79103) = 0.0366.

    x__tango_z__mutmut_55 / _57: the cell's numerator is 0, so sign(0)·inf, computed for every cell,
    prints "invalid value encountered in multiply" in an ordinary comparison at the default margin."""
    p_lo, p_hi = tango_pvalues(np.array([3.0]), np.array([1.0]), np.array([20.0]), 0.10)
    assert p_hi[0] == 0.5
    q = _tango_q(3, 1, 20, -0.1)
    assert q == pytest.approx(0.179696, abs=1e-6)
    z = (3 - 1 + 20 * 0.1) / math.sqrt(20 * (2 * q - 0.1 * 1.1))
    assert z == pytest.approx(1.79103, abs=1e-5)
    assert p_lo[0] == pytest.approx(stats.norm.sf(z), rel=1e-9)
    assert p_lo[0] == pytest.approx(0.0366, abs=1e-4)


@pytest.mark.usefixtures("no_numpy_warnings")
def test_tango_pvalues_read_a_margin_beyond_100pp_as_100pp() -> None:
    """Δ lies in [-1, 1], where the score statistic is defined, so a margin above 100 pp is clamped
    to 100 pp (only a direct caller can pass one: ``aggregate``, ``paired_compare`` and the options stop
    at 100). At 100 pp a table
    with a pair that is not reference-only (not model-only) rules out Δ = -1 (Δ = +1): p ~ 0; the one-way
    table sits on the null: p ~ 0.5 (the bound clears nothing, so no claim).

    x_tango_pvalues__mutmut_29 / _40 (the clamp at ∓(2 - 1e-12)) evaluate Z at -1.5 / +1.5, outside the
    parameter space, and turn the one-way table's p into 0, a claim the data cannot support.
    x_tango_pvalues__mutmut_27 / _39 (the clamp at ∓(1 + 1e-12)) read 100 pp as ∓1 but 150 pp as
    ∓(1 + 1e-12), outside [-1, 1], so the two margins no longer give the same p: for _39 the model-only
    table's p_upper drops to 0 from 1,000 pairs (the score's numerator n·1e-12 reaches 1e-9 and Z turns
    infinite); for _27 the reference-only table's p_lower moves only in the 7th to 9th decimal."""
    b, c, n = [], [], []
    for total in range(1, 13):
        for bi in range(total + 1):
            for ci in range(total - bi + 1):
                b.append(bi), c.append(ci), n.append(total)
    for total in (999, 1000, 1001, 5000):  # one-way tables, and one pair short of it
        for bi, ci in ((0, total), (total, 0), (1, total - 1), (total - 1, 1)):
            b.append(bi), c.append(ci), n.append(total)
    b, c, n = (np.array(x, dtype=float) for x in (b, c, n))
    p_lo, p_hi = tango_pvalues(b, c, n, 1.5)
    p_lo_100, p_hi_100 = tango_pvalues(b, c, n, 1.0)
    np.testing.assert_array_equal(p_lo, p_lo_100)
    np.testing.assert_array_equal(p_hi, p_hi_100)
    all_ref, all_model = c == n, b == n
    np.testing.assert_allclose(p_lo[all_ref], 0.5, atol=1e-4)
    np.testing.assert_allclose(p_hi[all_model], 0.5, atol=1e-4)
    assert np.all(p_lo[~all_ref] < 1e-9) and np.all(p_hi[~all_model] < 1e-9)


# --- the fewest pairs that can certify --------------------------------------------------------------------------

@pytest.mark.parametrize(("margin_pp", "tail", "pairs"), [
    (5.0, 0.025, 73),    # 3.841459 * 0.95 / 0.05 = 72.99 -> 73   (x_min_pairs_to_certify__mutmut_9: /101 gives 74)
    (1.0, 0.025, 381),   # 3.841459 * 99 = 380.30 -> 381         (/101: 385)
    (5.0, 0.05, 52),     # 2.705543 * 19 = 51.41 -> 52 (one-sided decision level)
    (100.0, 0.025, 1),   # nothing to clear: one pair
    (150.0, 0.025, 1),   # x_min_pairs_to_certify__mutmut_16 (``m >= 2``): floor(z²(1 - 1.5)/1.5) + 1 = 0
    (250.0, 0.05, 1),
])
def test_min_pairs_to_certify_against_the_interval_width(margin_pp: float, tail: float, pairs: int) -> None:
    """The count is the fewest n whose best-case half-width z²/(n + z²) lies strictly inside the margin."""
    got = min_pairs_to_certify(margin_pp, tail)
    assert got == pairs
    m, z2 = margin_pp / 100.0, Z2[tail]
    assert z2 / (got + z2) < m
    if got > 1:
        assert z2 / (got - 1 + z2) >= m
