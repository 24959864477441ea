"""The statistics' contracts at their edges: which inputs are refused (and with what message), the
boundaries that are still accepted, the documented defaults, the JSON rounding rule and the
pairing keys. Written against the mutation survivors of issue 20; every expected value is
hand-worked or taken from the docstrings, never from the function under test."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pytest_agentfloor.stats import aggregate, build_table, holm, mcnemar_exact, pass_at_k, pass_hat_k, resample_weights
from pytest_agentfloor.stats.bootstrap import (
    ClusterSums,
    bootstrap_sums,
    cluster_sums,
    mean_ci,
    order_bounds,
    ratio_ci,
    ratio_replicates,
    tail_rank,
)
from pytest_agentfloor.stats.intervals import min_pairs_to_certify, tango, wilson, z_of
from pytest_agentfloor.stats.paired import claim_verdict, compare_to_reference, decision_tail, paired_compare
from pytest_agentfloor.stats.records import expand_scopes, normalise_cluster
from pytest_agentfloor.stats.serialize import clean_float, dumps, to_jsonable
from pytest_agentfloor.stats import compute_tcr
from pytest_agentfloor.stats.records import PLAUSIBLE_MAX


def rec(model="m", task="A01", tier="A0", variant="v0", instance="i0", run=0, passed=True, **extra) -> dict:
    return {"model": model, "task": task, "tier": tier, "variant": variant, "instance": instance, "run": run,
            "passed": passed, **extra}


# --- refused inputs name the problem; the ends of the valid range are accepted -------------------

def test_resample_weights_bounds() -> None:
    assert resample_weights(1, 1).tolist() == [[1.0]]  # one unit, one replicate: drawn once
    for bad in ((0, 5), (5, 0)):
        with pytest.raises(ValueError, match=r"^n_units and n_boot must be >= 1"):
            resample_weights(*bad)


def test_resample_weights_rows_count_draws() -> None:
    w = resample_weights(7, 50, seed=3)
    assert w.shape == (50, 7) and w.dtype == np.float64
    assert (w.sum(axis=1) == 7).all()  # each replicate draws U units with replacement
    assert np.array_equal(w, resample_weights(7, 50, seed=3)) and not np.array_equal(w, resample_weights(7, 50, seed=4))


def test_bootstrap_sums_bounds() -> None:
    cs = ClusterSums(np.zeros(3, dtype=np.int64), np.array([1.0, 0.0, 1.0]), np.ones(3), 1)
    s_num, s_den = bootstrap_sums(cs, 1, 0)
    assert s_num.shape == s_den.shape == (1, 1) and s_den[0, 0] == 3.0
    with pytest.raises(ValueError, match=r"^n_boot must be >= 1"):
        bootstrap_sums(cs, 0, 0)


@pytest.mark.parametrize("tail", [0.0, 1.0, -0.1, 1.5])
def test_tail_rank_refuses_tails_outside_the_open_unit_interval(tail: float) -> None:
    with pytest.raises(ValueError, match=r"^tail probability must be in \(0, 1\)"):
        tail_rank(100, tail)


@pytest.mark.parametrize(("n_boot", "tail", "k"), [(1000, 0.025, 25), (1000, 0.05, 50), (10, 0.05, 1),
                                                   (100, 0.001, 1), (3, 0.5, 2), (999, 0.025, 25)])
def test_tail_rank_is_ceil_of_tail_times_b(n_boot: int, tail: float, k: int) -> None:
    assert tail_rank(n_boot, tail) == k


def test_order_bounds_take_the_kth_smallest_and_largest() -> None:
    reps = np.arange(1.0, 101.0)  # sorted replicates 1..100
    assert order_bounds(reps, 0.05) == (5.0, 96.0)


def test_ratio_replicates_nan_only_for_empty_denominators() -> None:
    out = ratio_replicates(np.array([1.0, 0.0, 3.0]), np.array([2.0, 0.0, 4.0]), 100.0)
    assert out[0] == 50.0 and math.isnan(out[1]) and out[2] == 75.0
    tiny = ratio_replicates(np.array([0.5]), np.array([0.5]))  # fractional weights below one still divide
    assert tiny[0] == 1.0


@pytest.mark.parametrize("tail", [0.0, 0.5, 0.7, -0.01])
def test_z_of_refuses_tails_outside_zero_to_half(tail: float) -> None:
    with pytest.raises(ValueError, match=r"^tail probability must be in \(0, 0.5\)"):
        z_of(tail)


def test_z_of_tabulated() -> None:
    assert z_of(0.025) == pytest.approx(1.959964, abs=1e-6)  # standard normal table
    assert z_of(0.05) == pytest.approx(1.644854, abs=1e-6)
    assert z_of(0.4999) == pytest.approx(0.000251, abs=1e-6)


def test_holm_messages_and_shape() -> None:
    with pytest.raises(ValueError, match=r"^p-values must be in \[0, 1\] and not NaN"):
        holm([0.1, float("nan")])
    out = holm([])
    assert out.shape == (0,)
    assert holm(np.array([[0.01, 0.04]])).tolist() == pytest.approx([0.02, 0.04])  # any shape is flattened


def test_mcnemar_refuses_negative_counts() -> None:
    for b, c in ((-1, 3), (3, -1)):
        with pytest.raises(ValueError, match=r"^discordant counts must be >= 0"):
            mcnemar_exact(b, c)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 1) == 1.0  # one discordant pair: P(X <= 0) * 2 = 1, capped
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)  # both tails of Binomial(5, 1/2)


def test_pass_at_k_refuses_impossible_counts() -> None:
    for n, c, k in ((3, 4, 1), (3, -1, 1), (3, 1, 0)):
        with pytest.raises(ValueError, match=r"^need k >= 1 and 0 <= c <= n"):
            pass_at_k(n, c, k)
        with pytest.raises(ValueError, match=r"^need k >= 1 and 0 <= c <= n"):
            pass_hat_k(n, c, k)
    assert pass_at_k(3, 3, 1) == 1.0 and pass_hat_k(3, 0, 1) == 0.0  # the ends c = n and c = 0 are valid


def test_decision_tail_and_verdicts() -> None:
    assert decision_tail(0.05, "two-sided") == 0.025 and decision_tail(0.05, "one-sided") == 0.05
    with pytest.raises(ValueError, match=r"^decision must be 'two-sided' or 'one-sided', got 'both'"):
        decision_tail(0.05, "both")
    assert claim_verdict(True, False) == "yes"
    assert claim_verdict(False, False) == "insufficient evidence"  # the interval holds both outcomes
    assert claim_verdict(False, True) == "no"  # refuted: the interval excludes the claim


def test_normalise_cluster() -> None:
    assert normalise_cluster(None) == "unit"
    assert [normalise_cluster(c) for c in ("unit", "task", "run")] == ["unit", "task", "run"]
    with pytest.raises(ValueError, match=r"^cluster must be None or one of .*'unit'.*got 'tasks'"):
        normalise_cluster("tasks")


def test_paired_compare_refuses_misaligned_input_with_a_message() -> None:
    with pytest.raises(ValueError, match=r"^pass_model and pass_ref must be aligned pairs of equal length"):
        paired_compare([1, 0], [1])
    with pytest.raises(ValueError, match=r"^unit must have one entry per pair"):
        paired_compare([1, 0], [1, 1], unit=[0])


@pytest.mark.parametrize(("kw", "message"), [
    ({"interval_method": "bca"}, r"^interval method must be one of guarded, paper, got 'bca'"),
    ({"decision": "both"}, r"^decision bound must be one of two-sided, one-sided, got 'both'"),
    ({"infra_threshold": 1.01}, r"^infra threshold must be a share between 0 and 1"),
    ({"infra_threshold": -0.01}, r"^infra threshold must be a share between 0 and 1"),
    ({"n_boot": 0}, r"^n_boot must be >= 1"),
    ({"alpha": 0.0}, r"^alpha must be in \(0, 0.5\)"),
    ({"alpha": 0.5}, r"^alpha must be in \(0, 0.5\)"),
    ({"margin_pp": -1.0}, r"^margin_pp must be between 0 and 100 percentage points, got -1$"),
    ({"margin_pp": 100.5}, r"^margin_pp must be between 0 and 100 percentage points, got 100.5$"),
    ({"margin_pp": float("nan")}, r"^margin_pp must be between 0 and 100 percentage points, got nan$"),
])
def test_aggregate_refuses_bad_settings(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        aggregate([rec()], None, **kw)


def test_aggregate_accepts_the_ends_of_its_ranges() -> None:
    recs = [rec(run=r, passed=r % 2 == 0) for r in range(4)]
    for kw in ({"infra_threshold": 0.0}, {"infra_threshold": 1.0}, {"margin_pp": 0.0}, {"n_boot": 1},
               {"alpha": 0.49}):
        s = aggregate(recs, None, **kw)
        assert s.tcr["m"]["overall"].tcr == 0.5


def test_build_table_refusals_name_the_record_and_the_key() -> None:
    with pytest.raises(ValueError, match=r"^record 1 lacks required field\(s\) \['passed'\]"):
        build_table([rec(), {k: v for k, v in rec(run=1).items() if k != "passed"}])
    with pytest.raises(ValueError, match=r"^record 0 lacks required field\(s\) \['run'\]"):
        build_table([rec(run=None)])
    with pytest.raises(ValueError, match=r"^unknown tier\(s\) \['Z'\]; expected"):
        build_table([rec(tier="Z")])
    with pytest.raises(ValueError, match=r"^duplicate run record for \(model, task, variant, instance, run\) = "
                                         r"\(m, A01, v1, i2, 3\)"):
        build_table([rec(variant="v0"), rec(variant="v1", instance="i2", run=3),
                     rec(variant="v1", instance="i2", run=3, passed=False)])
    with pytest.raises(ValueError, match=r"^task\(s\) recorded under several tiers: \['B2'\]$"):
        build_table([rec(task="A01"), rec(task="B2", tier="B"), rec(task="B2", tier="C", run=1),
                     rec(task="C3", tier="C")])


def test_a_duplicate_pair_of_records_is_refused_even_as_the_only_two() -> None:
    with pytest.raises(ValueError, match=r"^duplicate run record"):
        build_table([rec(), rec(passed=False)])


def test_build_table_warnings_name_the_field() -> None:
    t = build_table([rec(failure_mode="F9", first_unmet="Z", terminal_flag="odd", passed=False),
                     rec(run=1, tokens_in=5, latency_s=1.0, wall_s=1.0, busy_s=1.0, tokens_out=1)])
    assert "unknown failure_mode label(s): F9" in t.warnings
    assert "unknown first_unmet label(s): Z" in t.warnings
    assert "unknown terminal_flag label(s): odd" in t.warnings
    assert "1 record(s) lack tokens_in; excluded from its sums and means" in t.warnings
    assert not any("cost_usd" in w for w in t.warnings)  # an unpriced model's missing cost is expected
    clean = build_table([rec(tokens_in=1, tokens_out=1, latency_s=1.0, wall_s=1.0, busy_s=1.0)])
    assert clean.warnings == ()


def test_unknown_labels_are_appended_sorted_and_none_is_minus_one() -> None:
    t = build_table([rec(run=0, passed=False, failure_mode="Fz"), rec(run=1, passed=False, failure_mode="Fa"),
                     rec(run=2, passed=False, failure_mode="F1"), rec(run=3)])
    assert t.failure_mode_labels[-2:] == ("Fa", "Fz")
    assert t.failure_mode.tolist() == [t.failure_mode_labels.index("Fz"), t.failure_mode_labels.index("Fa"), 0, -1]
    assert t.warnings[0] == "unknown failure_mode label(s): Fa, Fz"


# --- pairing and resampling keys --------------------------------------------------------------------

def _grid_records(models=("a", "b")) -> list[dict]:
    return [rec(model=m, task=t, tier=tier, variant=v, instance=i, run=r, passed=(r + len(v)) % 2 == 0)
            for m in models for t, tier in (("A01", "A0"), ("B1", "B"), ("B2", "B"))
            for v in ("v0", "v1", "v2") for i in ("i0", "i1") for r in (0, 1, 2)]


def test_task_key_and_group_key_identify_runs_and_items() -> None:
    t = build_table(_grid_records())
    tup = list(zip(t.task.tolist(), t.variant.tolist(), t.instance.tolist(), t.run.tolist()))
    key = t.task_key()
    for i in range(t.n):
        for j in range(t.n):
            assert (key[i] == key[j]) == (tup[i] == tup[j])  # the same run of any model, nothing else
    group = t.group_key()
    for i in range(t.n):
        for j in range(t.n):
            assert (group[i] == group[j]) == (tup[i][:3] == tup[j][:3])
    assert key.dtype.kind == "i" and group.dtype.kind == "i"


def test_unit_codes_are_integers_in_canonical_order() -> None:
    t = build_table(_grid_records(models=("a",)))
    u = t.unit_code("unit")
    tup = list(zip(t.variant.tolist(), t.instance.tolist(), t.run.tolist()))
    assert u.dtype.kind == "i"
    for i in range(t.n):
        for j in range(t.n):
            assert (u[i] < u[j]) == (tup[i] < tup[j])  # same tuple same id; ids sort like the tuples
    assert t.unit_code("task").tolist() == t.task.tolist()
    assert t.unit_code("run").tolist() == list(range(t.n)) and t.unit_code("run").dtype.kind == "i"


def test_expand_scopes_maps_rows_to_their_tier_then_overall() -> None:
    t = build_table([rec(task="A01", tier="A0"), rec(task="C1", tier="C")])  # tiers present: A0, C
    rows, scope = expand_scopes(t, np.array([1, 0]))
    assert rows.tolist() == [1, 0, 1, 0]
    assert scope.tolist() == [1, 0, 2, 2]  # C is the second scope present, overall the last
    assert scope.dtype.kind == "i"


def test_cluster_sums_group_units_within_cells() -> None:
    cs = cluster_sums(np.array([1, 0, 1, 1]), np.array([5, 5, 5, 0]), np.array([1.0, 0.0, 1.0, 1.0]),
                      np.array([1.0, 2.0, 3.0, 4.0]), 3)
    assert cs.cell.tolist() == [0, 1, 1] and cs.cell.dtype.kind == "i"
    assert cs.num.tolist() == [0.0, 1.0, 2.0]
    assert cs.den.tolist() == [2.0, 4.0, 4.0]
    assert cs.n_units.tolist() == [1, 2, 0]
    assert [x.tolist() for x in cs.totals] == [[0.0, 3.0, 0.0], [2.0, 8.0, 0.0]]
    plain = cluster_sums(np.array([0, 0]), np.array([3, 3]), np.array([1, 0]), None, 1)
    assert plain.den.tolist() == [2.0]  # without weights every observation weighs 1
    empty = cluster_sums(np.empty(0), np.empty(0), np.empty(0), None, 2)
    assert empty.num.size == empty.den.size == 0 and empty.n_units.tolist() == [0, 0]
    assert [x.tolist() for x in empty.totals] == [[0.0, 0.0], [0.0, 0.0]]


def test_ratio_ci_empty_and_weighted() -> None:
    assert ratio_ci([]) .estimate is None
    assert ratio_ci([1.0, 2.0], [0.0, 0.0]).low is None  # no weight at all: undefined, not 0
    ci = ratio_ci([1.0, 1.0, 0.0], [1.0, 2.0, 1.0], n_boot=200)
    assert ci.estimate == 0.5 and ci.n_units == 3
    assert mean_ci([1.0, 1.0, 1.0], n_boot=50).low == 1.0
    one = ratio_ci([2.0], [4.0], n_boot=10)
    assert (one.estimate, one.low, one.high) == (0.5, 0.5, 0.5)


# --- score intervals -----------------------------------------------------------------------------

def test_wilson_hand_worked() -> None:
    z = 1.959963984540054
    lo, hi = wilson(5, 5, 0.025)
    assert float(lo) == pytest.approx(5 / (5 + z * z)) and float(hi) == 1.0  # the module doc's 56.6 %
    lo, hi = wilson(0, 4, 0.025)
    assert float(lo) == 0.0 and float(hi) == pytest.approx(z * z / (4 + z * z))
    lo, hi = wilson(np.array([3, 1]), np.array([0, 0]), 0.025)
    assert np.isnan(lo).all() and np.isnan(hi).all()


def test_tango_without_discordant_pairs_is_plus_minus_z2_over_n_plus_z2() -> None:
    z2 = 1.959963984540054 ** 2
    lo, hi = tango(0, 0, 20, 0.025)
    assert float(lo[0]) == pytest.approx(-z2 / (20 + z2), abs=1e-9)
    assert float(hi[0]) == pytest.approx(z2 / (20 + z2), abs=1e-9)
    lo, hi = tango(0, 0, 0, 0.025)
    assert math.isnan(lo[0]) and math.isnan(hi[0])


def test_min_pairs_to_certify_hand_worked() -> None:
    z2 = 1.959963984540054 ** 2
    # n > z^2 (1 - m) / m: margin 10 pp -> 34.57..., so 35 pairs
    assert min_pairs_to_certify(10.0, 0.025) == math.floor(z2 * 0.9 / 0.1) + 1 == 35
    assert min_pairs_to_certify(10.0, 0.025, "paper") == 1
    assert min_pairs_to_certify(0.0, 0.025) == 10**9
    assert min_pairs_to_certify(100.0, 0.025) == 1


# --- JSON rounding ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("x", "out"), [
    (0.123456789, 0.123457),     # below 1: six significant digits
    (0.0000549123, 5.49123e-05),  # (a cost per run is not flattened)
    (1.2345678, 1.234568),       # from 1 up: six decimals
    (123.4567891, 123.456789),
    (-1.5, -1.5), (2.0, 2.0), (0.0, 0.0), (1.0, 1.0),
])
def test_clean_float_rule(x: float, out: float) -> None:
    assert clean_float(x) == out


def test_clean_float_normalises_negative_zero_and_non_finite() -> None:
    assert math.copysign(1.0, clean_float(-0.0)) == 1.0
    assert clean_float(float("nan")) is None and clean_float(float("inf")) is None and clean_float(None) is None
    assert clean_float(1.5) == 1.5 and isinstance(clean_float(3), float)


def test_to_jsonable_passes_ndigits_down_and_converts_numpy() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Point:  # a dataclass with an optional field, as the summary's cells are
        k: int
        rate: float
        low: float | None

    assert to_jsonable({"a": [1.23456789, (2.3456789,)]}, 2) == {"a": [1.23, [2.35]]}
    assert to_jsonable(Point(k=1, rate=0.123456789, low=None), 3) == {"k": 1, "rate": 0.123, "low": None}
    assert to_jsonable(np.array([0.5, 1.25]), 1) == [0.5, 1.2]
    assert to_jsonable(np.bool_(True)) is True and to_jsonable(np.bool_(False)) is False
    assert to_jsonable(np.int64(7)) == 7 and type(to_jsonable(np.int64(7))) is int
    assert to_jsonable({2: "x", "a": "y", 10: "z"}) == {"10": "z", "2": "x", "a": "y"}  # mixed keys sort as text
    with pytest.raises(TypeError, match=r"^cannot serialise set"):
        to_jsonable({1, 2})


def test_dumps_indents_on_request() -> None:
    assert dumps({"b": 1, "a": float("nan")}) == '{"a": null, "b": 1}'
    assert dumps({"a": 1}, indent=2) == '{\n  "a": 1\n}'
    assert json.loads(dumps([0.1234567])) == [0.123457]


def _score_by_likelihood(b: int, c: int, n: int, d0: float) -> float:
    """Tango's Z(Δ0) with q maximised numerically (scipy), independent of the closed-form root."""
    from scipy import optimize

    lo_q, hi_q = max(0.0, -d0) + 1e-12, (1 - d0) / 2 - 1e-12

    def nll(q: float) -> float:
        p12, p21, rest = q + d0, q, 1 - 2 * q - d0
        return -(b * math.log(max(p12, 1e-300)) + c * math.log(max(p21, 1e-300))
                 + (n - b - c) * math.log(max(rest, 1e-300)))

    q = optimize.minimize_scalar(nll, bounds=(lo_q, hi_q), method="bounded", options={"xatol": 1e-13}).x
    return (b - c - n * d0) / math.sqrt(n * (2 * q + d0 * (1 - d0)))


@pytest.mark.parametrize(("b", "c", "n", "margin"), [(9, 0, 45, 0.1), (2, 5, 40, 0.1), (7, 3, 60, 0.05),
                                                     (0, 0, 30, 0.2), (12, 4, 30, 0.15),
                                                     (1, 0, 1, 0.1), (0, 1, 1, 0.1)])
def test_tango_pvalues_match_the_score_statistic(b: int, c: int, n: int, margin: float) -> None:
    from scipy.stats import norm

    from pytest_agentfloor.stats.intervals import tango_pvalues

    p_lo, p_hi = tango_pvalues(np.array([b]), np.array([c]), np.array([n]), margin)
    assert p_lo[0] == pytest.approx(norm.sf(_score_by_likelihood(b, c, n, -margin)), abs=1e-6)
    assert p_hi[0] == pytest.approx(norm.cdf(_score_by_likelihood(b, c, n, margin)), abs=1e-6)


def test_tango_pvalues_without_pairs_and_at_full_margin() -> None:
    from pytest_agentfloor.stats.intervals import tango_pvalues

    p_lo, p_hi = tango_pvalues(np.array([0, 0]), np.array([0, 0]), np.array([0, 3]), 1.5)
    assert p_lo[0] == 1.0 and p_hi[0] == 1.0  # no pairs: nothing is shown
    assert p_lo[1] < 1e-6 and p_hi[1] < 1e-6  # a margin beyond 100 pp is cleared by a table of ties


def test_pass_at_k_returns_a_float_only_for_two_scalars() -> None:
    # pass@1 of (n=4, c=1) and (n=4, c=2): 1/4 and 2/4; pass^2: C(1,2)/C(4,2) = 0 and C(2,2)/C(4,2) = 1/6
    assert pass_at_k([4, 4], 2, 1).tolist() == [0.5, 0.5]
    assert pass_at_k(4, [1, 2], 1).tolist() == [0.25, 0.5]
    assert pass_hat_k([4, 4], 2, 2).tolist() == pytest.approx([1 / 6, 1 / 6])
    assert pass_hat_k(4, [1, 2], 2).tolist() == pytest.approx([0.0, 1 / 6])
    assert isinstance(pass_at_k(4, 1, 1), float) and isinstance(pass_hat_k(4, 1, 1), float)
    assert math.isnan(pass_at_k(2, 1, 3))  # k above n: undefined


def test_empty_cells_raise_no_numpy_warnings() -> None:
    """0/0 in an empty cell is expected and masked: a user's pytest output must not fill with RuntimeWarnings."""
    import warnings

    recs = [rec(model="ref", run=r, passed=r % 2 == 0) for r in range(4)] + \
           [rec(model="ref", task="B1", tier="B", run=r) for r in range(2)] + \
           [rec(model="m", run=r, passed=True) for r in range(4)] + \
           [rec(model="m", task="B1", tier="B", run=r, passed=False, infra_error=True) for r in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = aggregate(recs, None, reference="ref", n_boot=50)
        assert s.tcr["m"]["B"].tcr is None and s.paired.tests["m"]["B"].n_pairs == 0
        assert s.paired.tests["m"]["B"].delta_pp is None and s.paired.tests["m"]["B"].ci95_low_pp is None
        assert s.cost["m"]["B"].cost_per_run is None and s.reliability["m"]["B"].points == ()
        assert s.cost["m"]["B"].tcr is None and s.cost["m"]["B"].n_infra == 2
        paper = aggregate(recs, None, reference="ref", n_boot=50, interval_method="paper")
        assert paper.tcr["m"]["B"].ci_low is None
        lo, hi = wilson(np.array([0, 2]), np.array([0, 4]), 0.025)
        assert math.isnan(lo[0]) and 0 < lo[1] < 0.5 < hi[1] < 1
        assert math.isnan(tango(0, 0, 0, 0.025)[0][0])
        assert math.isnan(ratio_replicates(np.array([0.0]), np.array([0.0]))[0])
        t = paired_compare([], [], n_boot=20)
        assert t.n_pairs == 0 and t.delta_pp is None and t.tcr_model is None and t.p_noninferiority is None
        assert t.p_equivalence is None and t.noninferior is False and t.boot_ci95_low_pp is None


def test_paired_compare_defaults_and_integer_input() -> None:
    pm, pr = [1, 1, 1, 0, 1, 0], [1, 0, 1, 1, 0, 0]  # 0/1 integers, not booleans
    t = paired_compare(pm, pr)
    assert (t.model, t.reference, t.scope, t.margin_pp) == ("model", "reference", "overall", 10.0)
    assert (t.interval_method, t.decision, t.n_unpaired_model, t.n_unpaired_ref) == ("guarded", "two-sided", 0, 0)
    assert (t.n_pairs, t.mcnemar_b, t.mcnemar_c, t.n_units) == (6, 2, 1, 6)
    assert (t.tcr_model, t.tcr_ref) == (pytest.approx(4 / 6), 0.5) and t.delta_pp == pytest.approx(100 / 6)
    assert t.p_mcnemar == 1.0  # Binomial(3, 1/2): P(X <= 1) * 2 = 1
    explicit = paired_compare(pm, pr, margin_pp=10.0, n_boot=10_000, seed=42, alpha=0.05)
    assert explicit == t
    assert paired_compare(pm, pr, seed=43) != t and paired_compare(pm, pr, n_boot=9_999) != t
    named = paired_compare(pm, pr, model="x", reference="y", scope="B", n_boot=50)
    assert (named.model, named.reference, named.scope) == ("x", "y", "B")
    clustered = paired_compare(pm, pr, unit=[0, 0, 1, 1, 2, 2], n_boot=50)
    assert clustered.n_units == 3 and clustered.n_pairs == 6


def test_mean_ci_passes_its_settings_on() -> None:
    v = np.random.default_rng(4).random(30)
    a = mean_ci(v, n_boot=300, seed=3, confidence=0.8)
    assert a == ratio_ci(v, np.ones(30), n_boot=300, seed=3, confidence=0.8)  # the plain mean is a ratio over ones
    assert a.estimate == pytest.approx(v.mean())
    assert mean_ci(v, n_boot=300, seed=4, confidence=0.8) != a
    assert mean_ci(v, n_boot=301, seed=3, confidence=0.8) != a
    wide = mean_ci(v, n_boot=300, seed=3)
    assert wide.low < a.low and wide.high > a.high  # 95 % by default, wider than 80 %
    assert ratio_ci(v, None, n_boot=300, seed=9) != ratio_ci(v, None, n_boot=300, seed=3)
    assert ratio_ci([1.0], n_boot=5).estimate == 1.0  # a single unit of weight 1 is defined
    assert mean_ci([0.25], n_boot=5).low == 0.25


@pytest.mark.parametrize(("n_loss", "n_win", "n"), [(10, 0, 101), (2, 3, 20), (3, 1, 10)])
def test_paired_bootstrap_follows_the_documented_law(n_loss: int, n_win: int, n: int) -> None:
    """Paper method: bounds are order statistics and p-values tail shares of the documented draw
    (module docs of bootstrap and paired), recomputed here from ``resample_weights``."""
    d = np.zeros(n)
    d[:n_loss], d[n_loss:n_loss + n_win] = -1.0, 1.0
    pm, pr = d > 0, d < 0
    b_draws = 400
    w = resample_weights(n, b_draws, 5)
    reps = np.sort(100.0 * (w @ d) / n)
    t = paired_compare(pm, pr, n_boot=b_draws, seed=5, margin_pp=10.0, interval_method="paper",
                       decision="one-sided")
    k95, k90 = math.ceil(0.025 * b_draws), math.ceil(0.05 * b_draws)
    assert (t.ci95_low_pp, t.ci95_high_pp) == pytest.approx((reps[k95 - 1], reps[b_draws - k95]))
    assert (t.ci90_low_pp, t.ci90_high_pp) == pytest.approx((reps[k90 - 1], reps[b_draws - k90]))
    p_lower = max(np.mean(reps <= -10.0 + 1e-9), 1 / b_draws)  # ties at the margin count against the claim
    p_upper = max(np.mean(reps >= 10.0 - 1e-9), 1 / b_draws)
    assert t.p_noninferiority == pytest.approx(p_lower)
    assert t.p_equivalence == pytest.approx(max(p_lower, p_upper))
    assert t.noninferior == (p_lower < 0.05) and t.equivalent == (max(p_lower, p_upper) < 0.05)
    other = paired_compare(pm, pr, n_boot=b_draws, seed=6, margin_pp=10.0, interval_method="paper",
                           decision="one-sided")
    assert (other.p_noninferiority, other.ci95_low_pp) != (t.p_noninferiority, t.ci95_low_pp)


@pytest.mark.parametrize("margin", [-0.1, 150.0, float("nan")])
def test_paired_tests_refuse_a_margin_outside_0_to_100pp(margin: float) -> None:
    """A margin is a difference of two pass rates: beyond 100 pp no table could ever miss it."""
    with pytest.raises(ValueError, match=r"^margin_pp must be between 0 and 100 percentage points"):
        paired_compare(np.ones(5, bool), np.ones(5, bool), margin_pp=margin)
    with pytest.raises(ValueError, match=r"^margin_pp must be between 0 and 100 percentage points"):
        compare_to_reference(build_table([rec(model="r"), rec(model="x")]), "r", margin_pp=margin, n_boot=10, seed=1,
                             cluster="unit", infra_as_failure=False)


def test_paired_tests_take_the_margins_at_both_ends() -> None:
    """0 pp (no difference allowed) and 100 pp (any difference allowed) are both margins one can state:
    40 concordant pairs certify both claims at 100 pp (one pair is enough there: n > z²(1 - m)/m = 0),
    and at 0 pp no number of pairs can (the bound z²(1 - m)/m is infinite): insufficient evidence."""
    t0 = paired_compare(np.ones(40, bool), np.ones(40, bool), margin_pp=0.0, n_boot=10)
    assert t0.margin_pp == 0.0
    assert (t0.noninferiority_verdict, t0.equivalence_verdict) == ("insufficient evidence",) * 2
    t = paired_compare(np.ones(40, bool), np.ones(40, bool), margin_pp=100.0, n_boot=10)
    assert t.margin_pp == 100.0 and (t.noninferiority_verdict, t.equivalence_verdict) == ("yes", "yes")


# -- records, TCR and pressure statistics at their edges (the mutation run's survivors) ------------
# Issue 20 survivors of records.py, tcr.py and pressure.py: behaviour no earlier test pinned down.
#
# Expected values are hand-worked (in comments), from scipy, or from the documented bootstrap draw
# recomputed here with plain numpy indexing; never from the function under test.


def _rec(model: str, task: str, tier: str, passed: bool, *, variant: str = "v0", instance: str = "i0",
         run: int = 0, **extra: object) -> dict:
    return {"model": model, "task": task, "tier": tier, "variant": variant, "instance": instance, "run": run,
            "passed": passed, **extra}


def test_a_run_cut_by_the_context_window_counts_as_an_infra_error() -> None:
    """x_build_table__mutmut_85, _86: the terminal flag "context_limit" (exactly that label) marks the run infra."""
    recs = [_rec("m", "B1", "B", False, run=0, terminal_flag="context_limit", infra_error=False),
            _rec("m", "B1", "B", True, run=1),
            _rec("m", "B1", "B", False, run=2, terminal_flag="turn_limit")]
    table = build_table(recs)
    assert table.infra.tolist() == [True, False, False]
    assert not [w for w in table.warnings if "terminal_flag" in w]  # a known flag
    est = compute_tcr(table, n_boot=50, seed=1, cluster="unit", infra_as_failure=False)["m"]["B"]
    # the cut run leaves the score: 1 pass of 2 scored runs, 1 infra run of 3
    assert (est.n_runs, est.n_passed, est.n_infra, est.tcr) == (2, 1, 1, 0.5)
    assert est.infra_share == pytest.approx(1 / 3)


def test_a_value_exactly_at_its_plausible_maximum_is_kept() -> None:
    """x_build_table__mutmut_142: the bound is inclusive (<= max); only a value above it is dropped."""
    at_max = {k: PLAUSIBLE_MAX[k] for k in ("tokens_in", "tokens_out", "latency_s", "wall_s", "cost_usd", "busy_s")}
    table = build_table([_rec("m", "B1", "B", True, **at_max)])
    assert table.warnings == ()
    assert (table.tokens_in[0], table.latency_s[0], table.cost_usd[0]) == (1e8, 604800.0, 1e5)
    over = build_table([_rec("m", "B1", "B", True, **{**at_max, "tokens_in": 1e8 + 1})])
    assert math.isnan(over.tokens_in[0]) and over.tokens_out[0] == 1e8
    assert over.warnings == ("1 record(s) report an impossible tokens_in (negative, non-numeric or above 1e+08); "
                             "kept in runs.jsonl, left out of every statistic",
                             "1 record(s) lack tokens_in; excluded from its sums and means")
