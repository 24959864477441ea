"""Paired tests and Holm: what the mutation run showed no test pinned.

Every expected value is worked by hand in a comment, from the documented resampling draw written
out with numpy, or from the closed form of Tango's interval with no discordant pair
(``±z² / (n + z²)``, z from scipy); none comes from the function under test.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from pytest_agentfloor.stats import build_table, compare_to_reference, holm, paired_compare
from pytest_agentfloor.stats.paired import INSUFFICIENT

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


# ---- paired_compare: the method, the decision and n_min_pairs are carried into the result ------------

def test_guarded_two_sided_needs_35_pairs_and_says_insufficient_below() -> None:
    """x__make_test__mutmut_80, x__make_test__mutmut_109: n_min_pairs is the guarded minimum, not None or the default 1.

    Hand: a table without discordant pairs has Tango's interval ±z²/(n + z²); inside ±10 pp iff
    n > z² (1 - 0.1) / 0.1 = 3.8415 * 9 = 34.57, so 35 pairs. On 20 agreeing pairs the interval is
    ±3.8415 / 23.8415 = ±16.1 pp: no claim, and 20 < 35 makes it "insufficient evidence".
    """
    t = paired_compare(np.ones(20, bool), np.ones(20, bool), margin_pp=10, n_boot=200)
    assert t.n_min_pairs == 35
    assert t.ci95_low_pp == pytest.approx(-100 * Z975_SQ / (20 + Z975_SQ), abs=1e-6)
    assert not t.noninferior and not t.equivalent
    assert (t.noninferiority_verdict, t.equivalence_verdict) == (INSUFFICIENT, INSUFFICIENT)


def test_equivalence_established_on_enough_pairs_is_a_yes() -> None:
    """x__make_test__mutmut_187: the equivalence verdict follows the equivalence decision.

    Hand: 200 agreeing pairs, Tango ±3.8415 / 203.8415 = ±1.88 pp, inside ±10 pp: both claims hold.
    """
    t = paired_compare(np.ones(200, bool), np.ones(200, bool), margin_pp=10, n_boot=200)
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
    t = paired_compare(np.zeros(5, bool), np.ones(5, bool), margin_pp=10, n_boot=200, interval_method="paper")
    assert t.interval_method == "paper"
    assert t.n_min_pairs == 1
    assert t.delta_pp == -100.0 and t.p_noninferiority == 1.0
    assert (t.noninferiority_verdict, t.equivalence_verdict) == ("no", "no")


def test_one_sided_decision_is_recorded_with_its_own_minimum() -> None:
    """x__make_test__mutmut_108: decision="one-sided" is carried into the result.

    Hand: each test at 5 %, n > 2.7055 * 9 = 24.35, so 25 pairs. 30 agreeing pairs: Tango's 90 %
    interval ±2.7055 / 32.7055 = ±8.27 pp is inside ±10 pp (the 95 % one, ±11.35 pp, is not).
    """
    t = paired_compare(np.ones(30, bool), np.ones(30, bool), margin_pp=10, n_boot=200, decision="one-sided")
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
    t = paired_compare(pm, np.ones(n, bool), margin_pp=20, n_boot=n_boot, seed=seed, alpha=0.05,
                       interval_method="paper")
    assert t.delta_pp == -5.0 and t.ci95_low_pp == -20.0
    assert t.p_noninferiority == 0.025 and t.p_equivalence == 0.025
    assert not t.noninferior  # x__make_test__mutmut_47: "<=" would claim non-inferiority at p == 0.025
    assert not t.equivalent  # x__make_test__mutmut_55: "<=" would claim equivalence at p == 0.025
    # not refuted either (the interval reaches above -20 pp): insufficient evidence, three outcomes
    assert (t.noninferiority_verdict, t.equivalence_verdict) == (INSUFFICIENT, INSUFFICIENT)
    # a hair more level and both claims hold (0.025 < 0.0251): the tie, not the data, decides above
    loose = paired_compare(pm, np.ones(n, bool), margin_pp=20, n_boot=n_boot, seed=seed, alpha=0.0502,
                           interval_method="paper")
    assert loose.noninferior and loose.equivalent


# ---- compare_to_reference -----------------------------------------------------------------------

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


# ---- holm ---------------------------------------------------------------------------------------

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
