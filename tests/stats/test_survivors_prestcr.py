"""Issue 20 survivors of records.py, tcr.py and pressure.py: behaviour no earlier test pinned down.

Expected values are hand-worked (in comments), from scipy, or from the documented bootstrap draw
recomputed here with plain numpy indexing; never from the function under test.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats as sps

from pytest_agentfloor.stats import build_table, compute_reliability, compute_tcr
from pytest_agentfloor.stats.pressure import cluster_bootstrap, failure_records
from pytest_agentfloor.stats.records import PLAUSIBLE_MAX


def _rec(model: str, task: str, tier: str, passed: bool, *, variant: str = "v0", instance: str = "i0",
         run: int = 0, **extra: object) -> dict:
    return {"model": model, "task": task, "tier": tier, "variant": variant, "instance": instance, "run": run,
            "passed": passed, **extra}


# --- records.py ---------------------------------------------------------------------------------

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


def test_pass_at_k_items_stay_apart_across_models() -> None:
    """xǁRunTableǁgroup_key__mutmut_2 (- instance), _4 (- variant): the item key must not collide once
    offset per model (reliability keys items by model * span + group_key)."""
    # one task, 2 variants x 2 instances, 2 runs each; model "a" passes everything, "b" nothing
    recs = [_rec(m, "B1", "B", m == "a", variant=v, instance=i, run=r)
            for m in ("a", "b") for v in ("v0", "v1") for i in ("i0", "i1") for r in (0, 1)]
    rel = compute_reliability(build_table(recs), infra_as_failure=False)
    for model, expected in (("a", 1.0), ("b", 0.0)):
        curve = rel[model]["B"]
        assert (curve.n_items, curve.max_runs) == (4, 2)  # four items of two runs each
        assert [(p.k, p.n_items, p.pass_at_k, p.pass_hat_k) for p in curve.points] == [
            (1, 4, expected, expected), (2, 4, expected, expected)]


# --- tcr.py -------------------------------------------------------------------------------------

def test_a_model_without_runs_in_a_tier_gets_an_empty_cell() -> None:
    """x_compute_tcr__mutmut_114, _191 (0/0 shares), _163, _166, _169, _172, _175, _178 (bounds of an empty cell):
    no scored run means None everywhere, and no numpy warning."""
    recs = [_rec("a", "A1", "A", True), _rec("a", "A1", "A", False, run=1),
            _rec("b", "B1", "B", True), _rec("b", "B1", "B", True, run=1)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = compute_tcr(build_table(recs), n_boot=200, seed=3, cluster="unit", infra_as_failure=True)
    empty = out["a"]["B"]
    assert (empty.n_runs, empty.n_passed, empty.n_infra, empty.n_units) == (0, 0, 0, 0)
    assert [empty.tcr, empty.ci_low, empty.ci_high, empty.boot_low, empty.boot_high, empty.wilson_low,
            empty.wilson_high, empty.infra_share, empty.tcr_infra_excluded, empty.tcr_infra_as_failure] == [None] * 10
    assert empty.unreliable is False
    # the model's own tier: 1 of 2, Wilson 95% from scipy; infra share 0 of 2
    full = out["a"]["A"]
    ref = sps.binomtest(1, 2).proportion_ci(confidence_level=0.95, method="wilson")
    assert full.tcr == 0.5 and full.infra_share == 0.0 and full.tcr_infra_as_failure == 0.5
    assert (full.wilson_low, full.wilson_high) == (pytest.approx(ref.low), pytest.approx(ref.high))
    assert isinstance(full.ci_low, float) and full.ci_low <= full.wilson_low


@pytest.mark.parametrize("method", ["paper", "guarded"])
def test_the_estimate_names_its_interval_method(method: str) -> None:
    """x_compute_tcr__mutmut_131 (None), _149 (left to the default "guarded"): the method asked for is reported."""
    recs = [_rec("m", f"B{t}", "B", p, run=r) for t, p in enumerate([True, False, True]) for r in range(2)]
    est = compute_tcr(build_table(recs), n_boot=100, seed=5, cluster="unit", infra_as_failure=False,
                      interval_method=method)["m"]["overall"]
    assert est.interval_method == method
    if method == "paper":  # the plain percentile bootstrap
        assert (est.ci_low, est.ci_high) == (est.boot_low, est.boot_high)
    else:  # the hull with Wilson
        assert (est.ci_low, est.ci_high) == (min(est.boot_low, est.wilson_low), max(est.boot_high, est.wilson_high))


# --- pressure.py --------------------------------------------------------------------------------

def test_cluster_bootstrap_lower_bound_is_the_kth_smallest_replicate() -> None:
    """x_cluster_bootstrap__mutmut_51: the lower bound is replicate k (not k - 1) when replicates are all distinct."""
    values = np.array([math.sqrt(p) for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43)]) - 4.0
    clusters = ["c00", "c00", "c01", "c02", "c03", "c04", "c05", "c05", "c06", "c07", "c08", "c09", "c10", "c11"]
    n_boot, seed = 400, 3
    # the documented draw: row b of default_rng(seed).integers(0, U, (B, U)) indexes the sorted clusters
    names = sorted(set(clusters))
    sums = np.array([values[[c == n for c in clusters]].sum() for n in names])
    sizes = np.array([clusters.count(n) for n in names], dtype=float)
    idx = np.random.default_rng(seed).integers(0, len(names), size=(n_boot, len(names)))
    reps = np.sort(sums[idx].sum(axis=1) / sizes[idx].sum(axis=1))
    k = 10  # ceil(0.025 * 400)
    assert reps[k - 2] < reps[k - 1] < reps[k] and reps[n_boot - k - 1] < reps[n_boot - k]  # neighbours differ
    est, lo, hi, p = cluster_bootstrap(values, clusters, n_boot=n_boot, seed=seed)
    assert est == pytest.approx(values.mean())
    assert lo == pytest.approx(reps[k - 1], abs=1e-12) and hi == pytest.approx(reps[n_boot - k], abs=1e-12)
    assert p == pytest.approx(max(1 / n_boot, float(np.mean(np.abs(reps - est) >= abs(est)))))


def test_failure_record_levels_in_design_order_then_unknown_by_name() -> None:
    """x__order__mutmut_5, _6, _10, _18, _19, _20, _21, _22, _23, _26, _30, _31, _32, _33 (the old rank table, now
    NAMED_LEVELS): V by number, W low then high, D raw, compact, typed, linked, any other level after them by name."""
    def fail(v: object, w: str, d: str, family: str) -> dict:
        return {"kind": "pressure", "model": "m", "passed": False, "first_unmet": "S", "terminal_flag": "budget",
                "facets": {"family": family, "intent": "email", "V": v, "W": w, "D": d, "lane": "fixed"}}

    # "a" sorts before every known name, so a known level mistaken for an unknown one would move
    # (and "b" comes first in the records, so unknown levels are seen sorted, not kept in record order)
    recs = [fail(16, "b", "b", "f6"), fail("x", "a", "linked", "f1"), fail(128, "high", "a", "f2"),
            fail(16, "low", "typed", "f3"), fail(8, "high", "compact", "f4"), fail(128, "low", "raw", "f5")]
    rows = failure_records(recs)
    levels = {axis: [r["level"] for r in rows if r["axis"] == axis] for axis in ("V", "W", "D")}
    assert levels == {"V": ["V8", "V16", "V128", "Vx"], "W": ["low", "high", "a", "b"],
                      "D": ["raw", "compact", "typed", "linked", "a", "b"]}
    assert [r["failures"] for r in rows if r["axis"] == "V"] == [1, 2, 2, 1]
