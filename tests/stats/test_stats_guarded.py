"""Intervals that never claim more than the data hold, and the paper's plain bootstrap as an option.

Expected values come from scipy (Wilson via ``binomtest(...).proportion_ci``), closed forms
worked by hand, an independent numerical inversion of Tango's score test, and the published
AgentFloor tables (seed 000, Tables 1 and 2).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from pytest_agentfloor.stats import aggregate, paired_compare
from pytest_agentfloor.stats.intervals import min_pairs_to_certify, tango, wilson

Z95 = stats.norm.isf(0.025)


def _runs(model: str, n: int, k: int, *, task: str = "A1", tier: str = "A", **extra) -> list[dict]:
    return [{"model": model, "task": task, "tier": tier, "variant": "v0", "instance": "i0", "run": r,
             "passed": r < k, "infra_error": False, **extra} for r in range(n)]


# -- single proportions ------------------------------------------------------------------------
@pytest.mark.parametrize("n,k", [(1, 0), (1, 1), (5, 5), (10, 3), (40, 17), (125, 100)])
def test_wilson_matches_scipy(n: int, k: int) -> None:
    ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson(k, n, 0.025)
    assert (float(lo), float(hi)) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_five_of_five_reports_the_wilson_lower_bound_not_100() -> None:
    s = aggregate(_runs("m", 5, 5), {"m": {"params_b": 1}}, n_boot=2000)
    e = s.tcr["m"]["A"]
    assert e.boot_low == 1.0  # the bootstrap alone collapses
    assert 100 * e.ci_low == pytest.approx(100 * 5 / (5 + Z95 ** 2), abs=1e-9)  # 56.6 %, by hand
    assert round(100 * e.ci_low, 1) == 56.6 and e.ci_high == 1.0
    assert s.config["interval_method"] == "guarded" and "Wilson" in s.config["interval_text"]
    # ...and a 90 % recipe is not granted on 5 runs
    assert s.recipes["A"]["90"].model is None and s.recipes["A"]["60"].model is None


@pytest.mark.slow  # an exhaustive sweep, 10-20 s; the quick selection and mutation runs leave it out
def test_every_small_proportion_contains_wilson() -> None:
    """Property: for every n <= 40 and every k, the reported interval for k/n contains Wilson's.

    One task per model and ``cluster="task"``: a single resampling unit, so the bootstrap is a
    point (the worst case the guard exists for); ``cluster="run"`` is the other extreme.
    """
    recs, want = [], {}
    for n in range(1, 41):
        for k in range(n + 1):
            name = f"n{n:02d}k{k:02d}"
            recs += _runs(name, n, k)
            ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
            want[name] = (ref.low, ref.high)
    for cluster in ("task", "run"):
        s = aggregate(recs, {}, n_boot=1000, cluster=cluster)
        for name, (lo, hi) in want.items():
            e = s.tcr[name]["A"]
            assert e.ci_low <= lo + 1e-12 and e.ci_high >= hi - 1e-12, (cluster, name, e)


# -- paired differences --------------------------------------------------------------------------
def _tango_by_inversion(b: int, c: int, n: int, z: float) -> tuple[float, float]:
    """Tango's interval by brute force: maximise the constrained likelihood numerically for each Δ0."""

    def score(d0: float) -> float:
        lo_q, hi_q = max(0.0, -d0) + 1e-12, (1 - d0) / 2 - 1e-12

        def nll(q: float) -> float:
            p12, p21, rest = q + d0, q, 1 - 2 * q - d0
            return -(b * math.log(max(p12, 1e-300)) + c * math.log(max(p21, 1e-300))
                     + (n - b - c) * math.log(max(rest, 1e-300)))

        q = optimize.minimize_scalar(nll, bounds=(lo_q, hi_q), method="bounded",
                                     options={"xatol": 1e-13}).x if hi_q > lo_q else lo_q
        var = n * (2 * q + d0 * (1 - d0))
        return (b - c - n * d0) / math.sqrt(var)

    est = (b - c) / n
    lo = optimize.brentq(lambda d: score(d) - z, -1 + 1e-9, est) if score(-1 + 1e-9) > z else -1.0
    hi = optimize.brentq(lambda d: score(d) + z, est, 1 - 1e-9) if score(1 - 1e-9) < -z else 1.0
    return lo, hi


@pytest.mark.parametrize("b,c,n", [(9, 0, 45), (1, 0, 45), (0, 5, 49), (7, 3, 60), (2, 2, 12), (12, 4, 30)])
def test_tango_matches_an_independent_inversion(b: int, c: int, n: int) -> None:
    lo, hi = tango(b, c, n, 0.025)
    want = _tango_by_inversion(b, c, n, Z95)
    assert (float(lo[0]), float(hi[0])) == pytest.approx(want, abs=2e-5)


@pytest.mark.parametrize("n", [1, 5, 25, 45, 60])
def test_tango_without_discordant_pairs_is_the_closed_form(n: int) -> None:
    lo, hi = tango(0, 0, n, 0.025)
    half = Z95 ** 2 / (n + Z95 ** 2)  # hand-derived: Z(Δ0)^2 = n Δ0 / (1 - Δ0) = z^2
    assert (float(lo[0]), float(hi[0])) == pytest.approx((-half, half), abs=1e-9)


def test_minimum_pairs_follow_from_the_score_interval() -> None:
    # two-sided 95 %: n > z^2 (1 - m) / m = 3.8415 * 9 = 34.57 -> 35; one-sided 95 % (z = 1.645): 24.35 -> 25
    assert min_pairs_to_certify(10, 0.025) == 35
    assert min_pairs_to_certify(10, 0.05) == 25
    assert min_pairs_to_certify(10, 0.025, "paper") == 1


@pytest.mark.parametrize("n_pairs", [1, 5, 25])
def test_few_concordant_pairs_are_insufficient_evidence(n_pairs: int) -> None:
    both = np.ones(n_pairs, bool)
    t = paired_compare(both, both.copy())
    assert t.boot_ci95_low_pp == 0 and t.boot_ci95_high_pp == 0  # the bootstrap alone would certify
    assert not t.equivalent and not t.noninferior
    assert t.equivalence_verdict == t.noninferiority_verdict == "insufficient evidence"
    assert t.ci95_low_pp < -10 < 10 < t.ci95_high_pp


@pytest.mark.slow  # an exhaustive sweep, 10-20 s; the quick selection and mutation runs leave it out
def test_zero_discordant_pairs_never_certify_below_the_minimum() -> None:
    """Property over every table with no discordant pair (any split of both-pass / both-fail).

    Below the minimum the method can certify at all (35 pairs at the default two-sided bound,
    25 with ``decision="one-sided"``), equivalence at ±10 pp is never certified and the verdict
    is "insufficient evidence"; from the minimum on, the verdict is what the score interval says.
    """
    for decision, n_min in (("two-sided", 35), ("one-sided", 25)):
        for n in range(1, 61):
            for a in sorted({0, n // 3, n // 2, n}):
                pm = np.arange(n) < a
                t = paired_compare(pm, pm.copy(), n_boot=500, decision=decision)
                if n < n_min:
                    assert not t.equivalent and t.equivalence_verdict == "insufficient evidence", (decision, n, a)
                else:
                    assert t.equivalent and t.equivalence_verdict == "yes", (decision, n, a)


def test_paired_interval_contains_tango_and_p_values_agree_with_it() -> None:
    pm = np.array([1] * 9 + [0] * 36, bool)
    pr = np.zeros(45, bool)
    t = paired_compare(pm, pr)
    lo, hi = tango(9, 0, 45, 0.025)
    assert t.ci95_low_pp <= 100 * lo[0] + 1e-9 and t.ci95_high_pp >= 100 * hi[0] - 1e-9
    assert t.noninferior == (t.ci95_low_pp > -10)


# -- the paper's plain bootstrap reproduces its published tables -----------------------------------
def _spread(k: int, n: int) -> list[bool]:
    """k passes spread evenly over n slots in canonical order."""
    return [((i + 1) * k) // n > (i * k) // n for i in range(n)]


def _cell(model: str, tier: str, per_task: list[int]) -> list[dict]:
    """5 tasks x 5 variants x 5 runs (n = 125, as Table 2), per-task passes spread over (variant, run)."""
    out = []
    for t, k in enumerate(per_task):
        passes = _spread(k, 25)
        for v in range(5):
            for r in range(5):
                out.append({"model": model, "task": f"{tier}{t + 1}", "tier": tier, "variant": f"v{v}",
                            "instance": "i0", "run": r, "passed": passes[v * 5 + r], "infra_error": False})
    return out


# Table 2 cells (n = 125) -> published 95 % CI. The per-run order of the published data is unknown;
# the bootstrap is a deterministic function of it, and reorderings move a bound by at most one
# 0.8 pp step. The construction spreads passes evenly within each task (115/125: one task at 24/25
# and one at 22/25, the others 23/25).
TABLE2 = {
    100: ([20] * 5, (73, 86)), 105: ([21] * 5, (78, 90)), 110: ([22] * 5, (82, 94)),
    20: ([4] * 5, (10, 22)), 5: ([1] * 5, (1, 8)), 115: ([22, 23, 23, 23, 24], (87, 96)),
}


def test_paper_method_reproduces_table2_cells() -> None:
    recs = []
    for k, (per_task, _) in TABLE2.items():
        recs += _cell(f"k{k:03d}", "B", per_task)
    s = aggregate(recs, {}, interval_method="paper")
    assert s.config["cluster"] == "run" and s.config["n_boot"] == 10_000 and s.config["seed"] == 42
    for k, (_, (lo, hi)) in TABLE2.items():
        e = s.tcr[f"k{k:03d}"]["B"]
        assert e.n_runs == 125 and e.n_passed == k
        assert abs(100 * e.ci_low - lo) <= 0.5 and abs(100 * e.ci_high - hi) <= 0.5, (k, e.ci_low, e.ci_high)
    # the guarded default (same runs resampled) is the hull of that bootstrap and Wilson
    g = aggregate(recs, {}, cluster="run")
    for k in TABLE2:
        a, b = g.tcr[f"k{k:03d}"]["B"], s.tcr[f"k{k:03d}"]["B"]
        assert a.ci_low == min(b.ci_low, a.wilson_low) and a.ci_high == max(b.ci_high, a.wilson_high)


def _pairs(tier: str, ref_pass: list[bool], model_pass: list[bool]) -> list[dict]:
    """Frame A pairs: 5 tasks x 3 variants x 3 runs (45), plus extra runs on the first task for E's 49."""
    keys = [(f"{tier}{t + 1}", f"v{v}", r) for t in range(5) for v in range(3) for r in range(3)]
    keys += [(f"{tier}1", "v3", r) for r in range(len(ref_pass) - 45)]
    keys.sort()
    out = []
    for (task, v, r), rp, mp in zip(keys, ref_pass, model_pass):
        for model, p in (("GPT-5", rp), ("gemma4:26b", mp)):
            out.append({"model": model, "task": task, "tier": tier, "variant": v, "instance": "i0", "run": r,
                        "passed": p, "infra_error": False})
    return out


def test_paper_method_reproduces_table1_frame_a() -> None:
    # A0: gemma 45/45, GPT-5 fails all 9 runs of one task (the first in canonical order) -> [+8.9, +33.3]
    a0 = _pairs("A0", [i >= 9 for i in range(45)], [True] * 45)
    # A: gemma 45/45, GPT-5 44/45 -> [0.0, +6.7]
    a = _pairs("A", [i != 20 for i in range(45)], [True] * 45)
    # E: 49 pairs, gemma 0/49, GPT-5 5/49 (10.2 %) -> [-18.4, -2.0]
    e = _pairs("E", _spread(5, 49), [False] * 49)
    s = aggregate(a0 + a + e, {}, reference="GPT-5", interval_method="paper")
    want = {"A0": (45, 20.0, 8.9, 33.3), "A": (45, 2.2, 0.0, 6.7), "E": (49, -10.2, -18.4, -2.0)}
    for tier, (n, delta, lo, hi) in want.items():
        t = s.paired.tests["gemma4:26b"][tier]
        assert t.n_pairs == n and round(t.delta_pp, 1) == delta
        assert abs(t.ci95_low_pp - lo) <= 0.5 and abs(t.ci95_high_pp - hi) <= 0.5, (tier, t.ci95_low_pp, t.ci95_high_pp)
    # the paper's verdicts at the caption's reading: A0 non-inferior, A equivalent, E neither
    assert s.paired.tests["gemma4:26b"]["A0"].noninferior and not s.paired.tests["gemma4:26b"]["A0"].equivalent
    assert s.paired.tests["gemma4:26b"]["A"].equivalent
    assert not s.paired.tests["gemma4:26b"]["E"].noninferior
    # guarded: A's single discordant pair among 45 is no longer a certified equivalence at 95 %
    g = aggregate(a0 + a + e, {}, reference="GPT-5")
    ga = g.paired.tests["gemma4:26b"]["A"]
    assert ga.ci95_low_pp < s.paired.tests["gemma4:26b"]["A"].ci95_low_pp
    assert g.paired.tests["gemma4:26b"]["A0"].noninferior  # 9 wins, no loss: still non-inferior


def test_paired_claims_have_three_outcomes() -> None:
    """certified (yes), refuted (no: the decision interval excludes the claim), insufficient evidence."""
    from pytest_agentfloor.stats.paired import paired_compare

    worse = paired_compare(np.zeros(25, bool), np.ones(25, bool), margin_pp=10, n_boot=500)
    assert worse.ci95_high_pp <= -10 and worse.n_pairs < worse.n_min_pairs
    assert (worse.noninferiority_verdict, worse.equivalence_verdict) == ("no", "no")  # few pairs, still refuted
    better = paired_compare(np.ones(25, bool), np.zeros(25, bool), margin_pp=10, n_boot=500)
    assert (better.noninferiority_verdict, better.equivalence_verdict) == ("yes", "no")  # far above +10: not equal
    wide = paired_compare(np.arange(40) % 10 != 0, np.ones(40, bool), margin_pp=10, n_boot=500)
    assert wide.ci95_low_pp < -10 < wide.ci95_high_pp
    assert wide.noninferiority_verdict == "insufficient evidence"
    same = paired_compare(np.ones(50, bool), np.ones(50, bool), margin_pp=10, n_boot=500)
    assert (same.noninferiority_verdict, same.equivalence_verdict) == ("yes", "yes")
