"""`aggregate` end to end: determinism, order independence, edge cases, and agreement with the parts."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from pytest_agentfloor.stats import (
    SCHEMA_VERSION,
    build_table,
    pareto_front,
    ratio_ci,
)
from pytest_agentfloor.stats import aggregate as _aggregate
from pytest_agentfloor.stats import paired_compare as _paired_compare
import warnings
from scipy import stats as sps
from pytest_agentfloor.stats import compute_tcr
import math
from scipy.stats import norm
from pytest_agentfloor.stats.diagnostics import compute_diagnostics


def aggregate(records, meta, **kw):
    """These tests pin the bootstrap mechanics over pooled instances with the textbook one-sided
    decisions; the guarded default, the instance split and the infra flag have tests of their own."""
    kw.setdefault("interval_method", "paper")
    kw.setdefault("decision", "one-sided")
    kw.setdefault("cluster", "unit")
    kw.setdefault("headline_instance", None)
    kw.setdefault("infra_threshold", 1.0)
    return _aggregate(records, meta, **kw)


def paired_compare(*args, **kw):
    kw.setdefault("interval_method", "paper")
    kw.setdefault("decision", "one-sided")
    return _paired_compare(*args, **kw)

TIER_TASKS = {"A0": ["A01", "A02"], "A": ["A1", "A2"], "B": ["B1", "B2", "B3"]}
RATES = {"small": 0.5, "mid": 0.7, "ref": 0.75, "perfect": 1.0, "zero": 0.0}
META = {"small": {"params_b": 1.0}, "mid": {"params_b": 8.0}, "ref": {"params_b": None, "pricing": {}},
        "perfect": {"params_b": 30.0}, "zero": {"params_b": 0.3}}


def make_records(seed: int = 0, models: dict[str, float] | None = None, infra_rate: float = 0.03) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for model, rate in (models or RATES).items():
        for tier, tasks in TIER_TASKS.items():
            for task in tasks:
                for v in ("v0", "v1", "v2"):
                    for inst in ("i0", "i1"):
                        for run in range(3):
                            infra = bool(rng.random() < infra_rate)
                            passed = bool(rng.random() < rate) and not infra
                            out.append({
                                "model": model, "task": task, "tier": tier, "variant": v, "instance": inst,
                                "run": run, "passed": passed, "infra_error": infra,
                                "failure_mode": None if passed or infra else str(rng.choice(["F1", "F5", "F5b"])),
                                "first_unmet": None if passed or infra else "P",
                                "terminal_flag": None, "tokens_in": 100, "tokens_out": 20,
                                "latency_s": 1.0, "wall_s": 1.5, "cost_usd": 0.001 if model == "ref" else 0.0001,
                            })
    return out


@pytest.fixture
def records() -> list[dict]:
    return make_records()


@pytest.fixture  # per test: mutmut counts a function as covered only by the tests that call it
def summary(records: list[dict]):
    return aggregate(records, META, reference="ref", n_boot=2000)


def test_json_shape_and_no_nan(summary) -> None:
    j = summary.to_json()
    assert j["schema_version"] == SCHEMA_VERSION
    assert set(j) == {"schema_version", "config", "scopes", "model_order", "models", "tcr", "paired",
                      "reliability", "recipes", "cost", "pareto", "breakdown", "n_records", "warnings",
                      "diagnostics", "instance_ablation", "judge"}
    assert j["scopes"] == ["A0", "A", "B", "overall"]
    assert j["model_order"] == ["zero", "small", "mid", "perfect", "ref"]
    text = json.dumps(j, sort_keys=True, allow_nan=False)
    assert json.loads(text) == j
    assert summary.dumps() == text
    assert list(j) == sorted(j) and list(j["tcr"]["mid"]) == sorted(j["tcr"]["mid"])


def test_same_seed_identical_and_order_independent(records: list[dict], summary) -> None:
    again = aggregate(list(records), META, reference="ref", n_boot=2000)
    assert again.dumps() == summary.dumps()
    shuffled = list(records)
    random.Random(5).shuffle(shuffled)
    assert aggregate(shuffled, META, reference="ref", n_boot=2000).dumps() == summary.dumps()
    other = aggregate(records, META, reference="ref", n_boot=2000, seed=7)
    assert other.to_json()["tcr"] != summary.to_json()["tcr"]


def test_tcr_points_counts_and_cells(records: list[dict], summary) -> None:
    for model in RATES:
        for tier in TIER_TASKS:
            rs = [r for r in records if r["model"] == model and r["tier"] == tier]
            scored = [r for r in rs if not r["infra_error"]]
            est = summary.tcr[model][tier]
            assert est.n_runs == len(scored) and est.n_infra == len(rs) - len(scored)
            assert est.n_passed == sum(r["passed"] for r in scored)
            assert est.tcr == pytest.approx(est.n_passed / est.n_runs)
            assert est.n_units == len({(r["variant"], r["instance"], r["run"]) for r in scored})
            assert est.ci_low <= est.tcr <= est.ci_high
    assert (summary.tcr["perfect"]["B"].ci_low, summary.tcr["perfect"]["B"].ci_high) == (1.0, 1.0)
    assert (summary.tcr["zero"]["overall"].ci_low, summary.tcr["zero"]["overall"].ci_high) == (0.0, 0.0)


def test_tcr_cell_equals_standalone_ratio_ci(records: list[dict], summary) -> None:
    scored = [r for r in records if r["model"] == "mid" and r["tier"] == "B" and not r["infra_error"]]
    units = sorted({(r["variant"], r["instance"], r["run"]) for r in scored})
    num = [sum(r["passed"] for r in scored if (r["variant"], r["instance"], r["run"]) == u) for u in units]
    den = [sum(1 for r in scored if (r["variant"], r["instance"], r["run"]) == u) for u in units]
    ci = ratio_ci(num, den, n_boot=2000, seed=42)
    est = summary.tcr["mid"]["B"]
    assert (est.tcr, est.ci_low, est.ci_high) == pytest.approx((ci.estimate, ci.low, ci.high), abs=1e-15)


def test_infra_as_failure(records: list[dict], summary) -> None:
    alt = aggregate(records, META, reference="ref", n_boot=500, infra_as_failure=True)
    for model in RATES:
        est, base = alt.tcr[model]["overall"], summary.tcr[model]["overall"]
        assert est.n_runs == base.n_runs + base.n_infra and est.n_passed == base.n_passed
    assert alt.config["infra_as_failure"] is True


def test_paired_table_path_matches_standalone(records: list[dict], summary) -> None:
    """The batched (model, tier) test equals paired_compare on the same inner join and units."""
    key = lambda r: (r["task"], r["variant"], r["instance"], r["run"])  # noqa: E731
    ref = {key(r): r["passed"] for r in records if r["model"] == "ref" and not r["infra_error"]}
    mine = [r for r in records if r["model"] == "small" and r["tier"] == "A" and not r["infra_error"]]
    pairs = sorted((key(r), r["passed"], ref[key(r)]) for r in mine if key(r) in ref)
    unit = [f"{k[1]}|{k[2]}|{k[3]}" for k, _, _ in pairs]
    standalone = paired_compare(np.array([p[1] for p in pairs]), np.array([p[2] for p in pairs]), np.array(unit),
                                n_boot=2000, seed=42, margin_pp=10)
    t = summary.paired.tests["small"]["A"]
    for f in ("n_pairs", "n_units", "delta_pp", "ci95_low_pp", "ci95_high_pp", "ci90_low_pp", "ci90_high_pp",
              "p_noninferiority", "p_equivalence", "noninferior", "equivalent", "mcnemar_b", "mcnemar_c", "p_mcnemar"):
        assert getattr(t, f) == pytest.approx(getattr(standalone, f), abs=1e-12), f
    ref_tier = [r for r in records if r["model"] == "ref" and r["tier"] == "A" and not r["infra_error"]]
    assert t.n_unpaired_model == len(mine) - t.n_pairs
    assert t.n_unpaired_ref == len(ref_tier) - t.n_pairs


def holm_by_definition(pvalues: list[float]) -> list[float]:
    """Holm (1979) step-down, written from the definition and independent of `holm()`: the i-th
    smallest of m p-values gets max over j <= i of min(1, (m - j + 1) * p_(j)) (1-based j)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda k: pvalues[k])
    adjusted = [0.0] * m
    for i, k in enumerate(order):
        adjusted[k] = max(min(1.0, (m - j) * pvalues[order[j]]) for j in range(i + 1))
    return adjusted


def test_holm_by_definition_on_a_hand_worked_family() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 (m=4): 0.02, 0.03, 0.06, max(0.06, 0.04) = 0.06
    assert holm_by_definition([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_families(summary) -> None:
    p = summary.paired
    assert p.available and p.reference == "ref" and "ref" not in p.tests
    tier_tests = [t for m in sorted(p.tests) for s, t in p.tests[m].items() if s != "overall"]
    assert p.family_sizes == {"model_tier": 4 * 3, "model_overall": 4}
    np.testing.assert_allclose([t.p_noninferiority_holm for t in tier_tests],
                               holm_by_definition([t.p_noninferiority for t in tier_tests]))
    np.testing.assert_allclose([t.p_mcnemar_holm for t in tier_tests],
                               holm_by_definition([t.p_mcnemar for t in tier_tests]))
    assert all(t.holm_family == "model_tier" for t in tier_tests)
    over = [p.tests[m]["overall"] for m in sorted(p.tests)]
    np.testing.assert_allclose([t.p_equivalence_holm for t in over],
                               holm_by_definition([t.p_equivalence for t in over]))
    for t in tier_tests + over:
        assert t.noninferior_holm == (t.p_noninferiority_holm < 0.05)
        assert not t.noninferior_holm or t.noninferior
    assert p.tests["perfect"]["overall"].noninferior_holm
    assert not p.tests["zero"]["overall"].noninferior


def test_unpaired_runs_are_counted() -> None:
    recs = make_records(1, {"m": 0.6, "ref": 0.6}, infra_rate=0.0)
    # Drop the reference's B3 runs and half the model's variant v2 runs; add a ref-only instance.
    recs = [r for r in recs if not (r["model"] == "ref" and r["task"] == "B3")]
    recs = [r for r in recs if not (r["model"] == "m" and r["variant"] == "v2" and r["instance"] == "i1")]
    extra = dict(recs[0], model="ref", task="A1", tier="A", instance="i9", variant="v0", run=0)
    s = aggregate(recs + [extra], {}, reference="ref", n_boot=300)
    b = s.paired.tests["m"]["B"]
    assert b.n_pairs == 2 * 3 * 2 * 3 - 2 * 3  # tasks B1, B2 minus the dropped (v2, i1) runs
    assert b.n_unpaired_model == 1 * 3 * 2 * 3 - 3  # all B3 runs of the model (minus dropped)
    assert b.n_unpaired_ref == 2 * 3  # the ref's B1/B2 (v2, i1) runs
    assert s.paired.tests["m"]["A"].n_unpaired_ref == 2 * 3 + 1  # A1/A2 (v2, i1) runs + the i9 extra
    o = s.paired.tests["m"]["overall"]
    assert o.n_pairs == sum(s.paired.tests["m"][t].n_pairs for t in TIER_TASKS)


@pytest.mark.parametrize("reference", [None, "absent-model"])
def test_missing_reference_is_reported_not_raised(records: list[dict], reference) -> None:
    s = aggregate(records, META, reference=reference, n_boot=200)
    assert not s.paired.available and s.paired.tests == {} and s.paired.reason
    if reference:
        assert any("absent-model" in w for w in s.warnings)
    json.dumps(s.to_json(), allow_nan=False)


def test_single_run_and_single_unit() -> None:
    rec = {"model": "solo", "task": "A1", "tier": "A", "variant": "v0", "instance": "i0", "run": 0, "passed": True,
           "infra_error": False, "tokens_in": 1, "tokens_out": 1, "latency_s": 1.0, "wall_s": 1.0, "cost_usd": 0.5}
    s = aggregate([rec], {"solo": {"params_b": 1}}, reference="solo", n_boot=100)
    e = s.tcr["solo"]["A"]
    assert (e.tcr, e.ci_low, e.ci_high, e.n_units) == (1.0, 1.0, 1.0, 1)
    assert [p.k for p in s.reliability["solo"]["A"].points] == [1]
    # self-hosted cost: the default $0.50/h over the 1 s the model was busy (the recorded cost_usd is not used)
    assert s.recipes["A"]["90"].model == "solo" and s.cost["solo"]["A"].cost_per_pass == pytest.approx(0.5 / 3600)
    assert s.paired.available and s.paired.tests == {}
    # One unit holding several tasks: degenerate interval at the point estimate.
    recs = [dict(rec, task=t, passed=p) for t, p in (("A1", True), ("A2", False), ("A3", True))]
    e = aggregate(recs, {}, n_boot=100).tcr["solo"]["A"]
    assert e.n_units == 1 and e.ci_low == e.ci_high == pytest.approx(2 / 3)


def test_all_infra_cell_is_undefined_not_nan() -> None:
    recs = make_records(2, {"m": 0.5}, infra_rate=0.0)
    recs = [dict(r, infra_error=True) if r["tier"] == "B" else r for r in recs]
    s = aggregate(recs, {}, n_boot=200)
    e = s.tcr["m"]["B"]
    assert e.n_runs == 0 and e.n_infra == 18 * 3 and e.tcr is None and e.ci_low is None
    assert s.cost["m"]["B"].cost_per_run is None and s.recipes["B"]["60"].model is None
    json.dumps(s.to_json(), allow_nan=False)


def test_pair_missing_on_one_side_for_a_whole_tier() -> None:
    recs = make_records(3, {"m": 0.6, "ref": 0.6}, infra_rate=0.0)
    recs = [r for r in recs if not (r["model"] == "ref" and r["tier"] == "A0")]
    s = aggregate(recs, {}, reference="ref", n_boot=300)
    t = s.paired.tests["m"]["A0"]
    assert t.n_pairs == 0 and t.delta_pp is None and t.p_noninferiority is None and t.holm_family is None
    assert t.p_mcnemar == 1.0 and not t.noninferior_holm and t.n_unpaired_model == 2 * 18
    assert s.paired.family_sizes["model_tier"] == 2
    json.dumps(s.to_json(), allow_nan=False)


def test_task_and_run_clusters(records: list[dict]) -> None:
    by_task = aggregate(records, META, reference="ref", n_boot=300, cluster="task")
    assert by_task.tcr["mid"]["B"].n_units == 3 and by_task.tcr["mid"]["overall"].n_units == 7
    assert by_task.paired.tests["mid"]["overall"].n_units == 7
    by_run = aggregate(records, META, reference="ref", n_boot=300, cluster="run")
    assert by_run.tcr["mid"]["B"].n_units == by_run.tcr["mid"]["B"].n_runs
    assert by_run.paired.tests["mid"]["B"].n_units == by_run.paired.tests["mid"]["B"].n_pairs
    assert by_run.config["resampling_unit"] == "run"
    with pytest.raises(ValueError):
        aggregate(records, META, cluster="variant")


def test_recipes_and_pareto_consistent_with_tables(summary) -> None:
    for tier, by_target in summary.recipes.items():
        for key, rec in by_target.items():
            ok = [m for m in summary.model_order
                  if summary.tcr[m][tier].ci_low is not None and 100 * summary.tcr[m][tier].ci_low >= float(key) - 1e-9]
            assert rec.model == (ok[0] if ok else None)
    for scope, front in summary.pareto.items():
        pts = {m: (summary.cost[m][scope].cost_per_run, summary.tcr[m][scope].tcr) for m in summary.models}
        assert front == pareto_front(pts)


def test_breakdown_totals(summary, records: list[dict]) -> None:
    for m in RATES:
        bd = summary.breakdown[m]["overall"]
        failed = [r for r in records if r["model"] == m and not r["passed"] and not r["infra_error"]]
        assert bd.n_failed == len(failed) == sum(bd.failure_mode.values())


@pytest.mark.parametrize(("mutate", "match"), [
    (lambda rs: rs + [dict(rs[0])], "duplicate"),
    (lambda rs: rs + [dict(rs[0], tier="C", run=99)], "several tiers"),
    (lambda rs: [dict(rs[0], tier="Z")], "unknown tier"),
    (lambda rs: [{k: v for k, v in rs[0].items() if k != "passed"}], "required"),
])
def test_invalid_input_raises(records: list[dict], mutate, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build_table(mutate(list(records[:5])))


def test_empty_corpus() -> None:
    s = aggregate([], {"ghost": {"params_b": 1}}, reference="ghost", n_boot=100)
    j = s.to_json()
    assert j["tcr"] == {} and j["scopes"] == ["overall"] and j["n_records"] == 0 and j["recipes"] == {}
    assert any("ghost" in w for w in j["warnings"])
    json.dumps(j, allow_nan=False)


@pytest.mark.slow
def test_paper_scale_families() -> None:
    """17 models x 750 runs at the default 10,000 draws (the chunked resampling path): one test per
    (model, tier) and per model. No wall-clock bound: timing assertions fail on a loaded machine."""
    models = {f"m{i:02d}": 0.2 + 0.04 * i for i in range(16)} | {"ref": 0.7}
    rng = np.random.default_rng(0)
    tasks = [(f"{t}{i}", t) for t in ("A0", "A", "B", "C", "D", "E") for i in range(5)]
    recs = [{"model": m, "task": task, "tier": tier, "variant": f"v{v}", "instance": "i0", "run": r,
             "passed": bool(rng.random() < p), "infra_error": False, "tokens_in": 10, "tokens_out": 5,
             "latency_s": 1.0, "wall_s": 1.0, "cost_usd": 0.001}
            for m, p in models.items() for task, tier in tasks for v in range(5) for r in range(5)]
    s = aggregate(recs, {}, reference="ref")
    assert s.paired.family_sizes == {"model_tier": 96, "model_overall": 16}


# -- records, TCR and pressure statistics at their edges (the mutation run's survivors) ------------
# Issue 20 survivors of records.py, tcr.py and pressure.py: behaviour no earlier test pinned down.
#
# Expected values are hand-worked (in comments), from scipy, or from the documented bootstrap draw
# recomputed here with plain numpy indexing; never from the function under test.


def _rec(model: str, task: str, tier: str, passed: bool, *, variant: str = "v0", instance: str = "i0",
         run: int = 0, **extra: object) -> dict:
    return {"model": model, "task": task, "tier": tier, "variant": variant, "instance": instance, "run": run,
            "passed": passed, **extra}


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


# -- diagnostics, cost, recipes and what aggregate hands on (the mutation run's survivors) ---------
# Hand-worked cases for stats survivors of the mutation run (issue 20): diagnostics of a model that
# only had infra errors, token and hourly pricing, the cloud cost per pass, the recipe boundary and
# models without a size, and what ``aggregate`` passes on to the instance ablation, the paired
# section, the unpriced warning and the judge section. Every expected value is worked out in a
# comment; none is computed by the function under test.


def rec(model: str = "m", task: str = "A1", tier: str = "A", instance: str = "i0", run: int = 0,
        passed: bool = True, **extra) -> dict:
    return {"model": model, "task": task, "tier": tier, "variant": "v0", "instance": instance, "run": run,
            "passed": passed, **extra}


def test_diagnostics_of_a_model_with_only_infra_runs() -> None:
    """x_compute_diagnostics__mutmut_59: the last model's cells hold no scored run, so the per-cell
    run counts must still reach them (``minlength``) and read 0, with every rate undefined."""
    counts = dict(calls=4, turns=2, calls_malformed=1, calls_hallucinated=0, calls_repeated=1, turns_leaked=1)
    recs = [rec(model="a", **counts), rec(model="a", run=1, passed=False, **counts),
            rec(model="z", passed=False, infra_error=True, **counts)]
    out = compute_diagnostics(build_table(recs), recs)
    z = out["z"]["overall"]  # mutant: IndexError (the count array stops after model a's cells)
    assert (z.n_runs, z.n_runs_missing, z.n_calls) == (0, 0, 0)
    assert (z.malformed_rate, z.leaked_rate, z.mean_calls, z.mean_turns) == (None, None, None, None)
    assert out["z"]["A"].n_runs == 0
    a = out["a"]["A"]  # 2 runs x 4 calls: 2/8 malformed, 2 of 4 turns leaked, 4 calls and 2 turns per run
    assert (a.n_runs, a.n_calls, a.malformed_rate, a.leaked_rate, a.mean_calls, a.mean_turns) == (
        2, 8, 0.25, 0.5, 4.0, 2.0)


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    """Wilson score interval written out: (k + z²/2)/(n + z²) ± z/(n + z²) sqrt(k(n-k)/n + z²/4)."""
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return centre - half, centre + half


def test_aggregate_hands_infra_and_alpha_to_the_instance_ablation() -> None:
    """x_aggregate__mutmut_70 (infra_as_failure not passed on), x_aggregate__mutmut_74 (alpha not passed on).
    Instance i1: a pass, an infra error, a failure. Counted as a failure the infra run makes
    n = 3, k = 1; at alpha = 0.1 the interval is Wilson's with z = Φ⁻¹(0.95) = 1.6449, not 1.96."""
    recs = [rec(run=0), rec(run=1),
            rec(instance="i1", run=0), rec(instance="i1", run=1, passed=False, infra_error=True),
            rec(instance="i1", run=2, passed=False)]
    s = _aggregate(recs, {"m": {"params_b": 1.0}}, n_boot=50, infra_as_failure=True, alpha=0.1)
    cell = {c.instance: c for c in s.instance_ablation}["i1"]
    assert (cell.n_runs, cell.n_passed, cell.n_infra) == (3, 1, 1)
    assert cell.tcr == pytest.approx(1 / 3)
    lo, hi = _wilson(1, 3, float(norm.ppf(0.95)))  # 0.07827, 0.74647 (at z = 1.96: 0.0615, 0.7923)
    assert (cell.ci_low, cell.ci_high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    assert (lo, hi) == (pytest.approx(0.07827, abs=1e-5), pytest.approx(0.74647, abs=1e-5))
    scored = _aggregate(recs, {"m": {"params_b": 1.0}}, n_boot=50, infra_as_failure=False, alpha=0.1)
    i1 = {c.instance: c for c in scored.instance_ablation}["i1"]
    assert (i1.n_runs, i1.n_passed, i1.n_infra) == (2, 1, 1)  # the infra run left out


def test_aggregate_hands_the_decision_bound_to_the_paired_section() -> None:
    """x_aggregate__mutmut_148: decision='one-sided' reaches the paired tests (the default is two-sided).
    Guarded Tango with no discordant pair needs n > z²(1 - m)/m pairs at margin m = 0.1:
    one-sided z = 1.6449, z² = 2.7055, so n > 24.35: 25 pairs (two-sided z = 1.96 would need 35)."""
    recs = [rec(model=m, run=r) for m in ("ref", "x") for r in range(3)]
    s = _aggregate(recs, {"ref": {"params_b": 1.0}, "x": {"params_b": 2.0}}, reference="ref", n_boot=50,
                  decision="one-sided")
    assert s.paired.decision == "one-sided"
    assert s.paired.n_min_pairs == 25
    assert s.config["decision_bound"] == "one-sided" and s.config["n_min_pairs"] == 25


def test_aggregate_names_every_unpriced_model_in_one_warning() -> None:
    """x_aggregate__mutmut_215: the model names are joined with ', '."""
    recs = [rec(model=m, latency_s=1.0) for m in ("beta", "alpha", "sized")]
    s = _aggregate(recs, {"sized": {"params_b": 3.0}}, n_boot=50)
    assert ("no pricing and no size for alpha, beta: cost unknown, no place on the cost Pareto front"
            in s.warnings)


def test_aggregate_reports_who_judged() -> None:
    """x_aggregate__mutmut_341, x_aggregate__mutmut_358: the judge section is computed from the records (not None or
    empty). 2 + 1 judge verdicts, 1 keyword verdict, 1 cache hit of 1 + 1 + 1 lookups."""
    recs = [rec(judge_model="j", judge_verdicts=2, keyword_verdicts=1, judge_cached=1, judge_requests=1,
                judge_cost_usd=0.5, judge_latency_s=2.0),
            rec(run=1, judge_model="j", judge_verdicts=1, judge_requests=1, judge_cost_usd=0.25,
                judge_latency_s=1.0)]
    s = _aggregate(recs, {"m": {"params_b": 1.0}}, n_boot=50)
    assert set(s.judge) == {"m", "overall"}
    j = s.judge["m"]
    assert (j.judges, j.judge_verdicts, j.keyword_verdicts, j.cache_hits, j.judge_requests) == (("j",), 3, 1, 1, 2)
    assert j.hit_rate == pytest.approx(1 / 3) and j.judge_cost_usd == 0.75 and j.judge_latency_s == 3.0
    assert s.to_json()["judge"]["overall"]["judge_verdicts"] == 3
