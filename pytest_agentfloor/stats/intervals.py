"""Score intervals that guard the bootstrap against claiming more than the data hold.

The percentile bootstrap collapses to a point whenever every resampling unit agrees (5/5 passes
gives ``[100, 100]``; 9 discordant pairs in one task give a narrow Δ interval). The *guarded*
interval method therefore reports the hull of the bootstrap interval and a score interval at the
same level, so it is never narrower than either:

* a single proportion ``k/n``: the Wilson score interval (Wilson, 1927). 5/5 at 95 % has lower
  bound ``5 / (5 + z²) = 56.6 %``.
* a paired difference ``Δ = p_model - p_ref`` from ``b`` (only the model passed), ``c`` (only the
  reference passed) and ``n`` pairs: Tango's score interval (Tango, 1998, Stat. Med. 17:891),
  the set of ``Δ0`` whose score statistic ``Z(Δ0) = (b - c - nΔ0) / sqrt(n (2 q(Δ0) + Δ0 (1 - Δ0)))``
  has ``|Z| <= z``, where ``q(Δ0)`` is the maximum-likelihood estimate of the probability that only
  the reference passes under ``Δ = Δ0``. With no discordant pair it is ``±z² / (n + z²)``.

Score p-values (one-sided, test inversion of the same statistic) are ``p_lower = 1 - Φ(Z(-m))``
for H0: Δ <= -m and ``p_upper = Φ(Z(m))`` for H0: Δ >= m, so "the interval's bound clears the
margin" and "p below the tail probability" are the same event, as for the bootstrap p-values.

``paper`` is the plain percentile bootstrap of the AgentFloor paper (no guard), kept to compare
with published tables.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

INTERVAL_METHODS: tuple[str, ...] = ("guarded", "paper")
#: which CI bound certifies non-inferiority / equivalence
DECISION_BOUNDS: tuple[str, ...] = ("two-sided", "one-sided")
_EPS = 1e-12


def z_of(tail: float) -> float:
    """Upper ``tail`` quantile of the standard normal (``z_of(0.025) = 1.95996...``)."""
    if not 0 < tail < 0.5:
        raise ValueError("tail probability must be in (0, 0.5)")
    return float(-ndtri(tail))


def wilson(k: np.ndarray | float, n: np.ndarray | float, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of ``k/n`` with ``tail`` in each tail (two-sided level ``1 - 2 tail``).

    Vectorised; NaN where ``n == 0``.
    """
    k_a = np.asarray(k, dtype=np.float64)
    n_a = np.asarray(n, dtype=np.float64)
    z = z_of(tail)
    z2 = z * z
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = (k_a + z2 / 2) / (n_a + z2)
        half = z / (n_a + z2) * np.sqrt(np.clip(k_a * (n_a - k_a) / n_a, 0.0, None) + z2 / 4)
        lo = np.where(n_a > 0, np.where(k_a <= 0, 0.0, np.clip(centre - half, 0.0, 1.0)), np.nan)
        hi = np.where(n_a > 0, np.where(k_a >= n_a, 1.0, np.clip(centre + half, 0.0, 1.0)), np.nan)
    return lo, hi


def _tango_z(b: np.ndarray, c: np.ndarray, n: np.ndarray, d0: np.ndarray) -> np.ndarray:
    """Tango's score statistic ``Z(Δ0)`` (decreasing in ``Δ0``); 0 where it is 0/0."""
    a2 = 2.0 * n
    bb = -b - c + (2.0 * n - b + c) * d0
    cc = -c * d0 * (1.0 - d0)
    disc = np.clip(bb * bb - 4.0 * a2 * cc, 0.0, None)
    q = np.clip((np.sqrt(disc) - bb) / (2.0 * a2), 0.0, None)
    var = n * (2.0 * q + d0 * (1.0 - d0))
    num = b - c - n * d0
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(var > _EPS, num / np.sqrt(np.where(var > _EPS, var, 1.0)),
                     np.where(np.abs(num) < 1e-9, 0.0, np.sign(num) * np.inf))
    return z


def tango(b: np.ndarray | float, c: np.ndarray | float, n: np.ndarray | float,
          tail: float) -> tuple[np.ndarray, np.ndarray]:
    """Tango's score interval for a paired difference, as fractions in [-1, 1]; NaN where ``n == 0``.

    Solved by bisection (60 halvings, far below display precision), vectorised over cells.
    """
    b_a, c_a, n_a = (np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in (b, c, n))
    b_a, c_a, n_a = np.broadcast_arrays(b_a, c_a, n_a)
    z = z_of(tail)
    ok = n_a > 0
    safe_n = np.where(ok, n_a, 1.0)
    est = np.where(ok, (b_a - c_a) / safe_n, 0.0)

    def solve(lo: np.ndarray, hi: np.ndarray, target: float) -> np.ndarray:
        # find Δ0 with Z(Δ0) = target on [lo, hi], where Z(lo) >= target >= Z(hi)
        for _ in range(60):
            mid = (lo + hi) / 2
            above = _tango_z(b_a, c_a, safe_n, mid) > target
            lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
        return (lo + hi) / 2

    lower = solve(np.full(est.shape, -1.0 + _EPS), est.copy(), z)
    upper = solve(est.copy(), np.full(est.shape, 1.0 - _EPS), -z)
    lower = np.where(_tango_z(b_a, c_a, safe_n, np.full(est.shape, -1.0 + _EPS)) <= z, -1.0, lower)
    upper = np.where(_tango_z(b_a, c_a, safe_n, np.full(est.shape, 1.0 - _EPS)) >= -z, 1.0, upper)
    return np.where(ok, lower, np.nan), np.where(ok, upper, np.nan)


def tango_pvalues(b: np.ndarray, c: np.ndarray, n: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided score p-values ``(p for H0: Δ <= -margin, p for H0: Δ >= +margin)``; margin a fraction."""
    b_a, c_a, n_a = (np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in (b, c, n))
    safe_n = np.where(n_a > 0, n_a, 1.0)
    m_lo = np.full(b_a.shape, max(-margin, -1.0 + _EPS))
    m_hi = np.full(b_a.shape, min(margin, 1.0 - _EPS))
    p_lower = 1.0 - ndtr(_tango_z(b_a, c_a, safe_n, m_lo))
    p_upper = ndtr(_tango_z(b_a, c_a, safe_n, m_hi))
    return np.where(n_a > 0, p_lower, 1.0), np.where(n_a > 0, p_upper, 1.0)


def min_pairs_to_certify(margin_pp: float, tail: float, method: str = "guarded") -> int:
    """Fewest pairs with which the best possible table (no discordant pair) clears ``±margin``.

    Guarded: Tango's interval is then ``±z²/(n + z²)``, which is inside the margin ``m`` iff
    ``n > z² (1 - m) / m``. Paper (plain bootstrap): a table without discordant pairs has a
    zero-width interval, so one pair suffices (which is why it is not the default).
    """
    if method == "paper":
        return 1
    m = margin_pp / 100.0
    if m <= 0:
        return 10**9
    if m >= 1:
        return 1
    z = z_of(tail)
    return int(math.floor(z * z * (1.0 - m) / m)) + 1


#: the most pairs a sample-size search looks at (a tier of 25 items x 4,000 runs): beyond, "more than"
MAX_PAIRS = 100_000


def tango_bounds_at(rate_b: float, rate_c: float, n: int, tail: float) -> tuple[float, float]:
    """Tango's interval (fractions) for the *expected* table of ``n`` pairs with discordance rates
    ``rate_b`` (only the model passes) and ``rate_c`` (only the reference passes)."""
    lo, hi = tango(rate_b * n, rate_c * n, n, tail)
    return float(lo[0]), float(hi[0])


def pairs_needed(rate_b: float, rate_c: float, margin_pp: float, tail: float, *, refute: bool = False,
                 n_max: int = MAX_PAIRS) -> int | None:
    """Fewest pairs at which the expected table certifies non-inferiority at ``-margin`` (lower bound
    above it) or, with ``refute``, excludes it (upper bound at or below it); None beyond ``n_max``.

    The expected table is the one with ``b = n * rate_b`` and ``c = n * rate_c``: a sample-size figure
    with roughly even odds, not a power calculation. The search assumes the bound moves monotonically
    towards ``rate_b - rate_c`` as ``n`` grows (a score interval for fixed rates does), and is exact
    under that assumption (doubling, then bisection on integers).
    """
    m = margin_pp / 100.0
    if not 0 <= rate_b <= 1 or not 0 <= rate_c <= 1 or rate_b + rate_c > 1 + 1e-12:
        raise ValueError(f"discordance rates must be in [0, 1] with a sum <= 1, got {rate_b}, {rate_c}")

    def ok(n: int) -> bool:
        lo, hi = tango_bounds_at(rate_b, rate_c, n, tail)
        return hi <= -m if refute else lo > -m

    delta = rate_b - rate_c
    if (refute and delta >= -m) or (not refute and delta <= -m):
        return None  # the expected table never decides: its centre lies on the other side of the margin
    hi_n = 1
    while not ok(hi_n):
        if hi_n >= n_max:
            return None
        hi_n = min(2 * hi_n, n_max)
    lo_n = hi_n // 2  # ok(lo_n) is False (or lo_n == 0)
    while hi_n - lo_n > 1:
        mid = (lo_n + hi_n) // 2
        lo_n, hi_n = (lo_n, mid) if ok(mid) else (mid, hi_n)
    return hi_n
