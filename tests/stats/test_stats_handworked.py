"""`aggregate` on a corpus small enough to count by hand: every field of the TCR, paired, reliability,
cost and model sections, the configuration echo and the warnings, checked against counts and
formulas worked out in the comments (Chen et al. pass@k, tau-bench pass^k, exact binomial McNemar),
never against the functions under test. Written for the mutation survivors of issue 20."""

from __future__ import annotations

import json
import math

import pytest

from pytest_agentfloor.stats import aggregate
from pytest_agentfloor.stats.cost import CostStats
from pytest_agentfloor.stats.recipes import deployment_recipes, size_order
from pytest_agentfloor.stats.tcr import TcrEstimate

# passes per run 0..3 of the one item of each tier (variant v0, instance i0)
PASSES = {
    "ref": {"A01": [1, 1, 1, 0], "B1": [1, 0, 1, 0]},
    "small": {"A01": [1, 0, 1, 1], "B1": [0, 0, 1, 0]},  # B1 run 3 is an infrastructure error
    "big": {"A01": [1, 1, 1, 1], "B1": [1, 1, 1, 1]},
}
TIER = {"A01": "A0", "B1": "B"}
META = {"small": {"params_b": 1.0}, "ref": {"params_b": 7.0, "pricing": {"hourly_usd": 3.6}},
        "ghost": {"params_b": 3.0}, "phantom": {}}


def records() -> list[dict]:
    out = []
    for model, tasks in PASSES.items():
        for task, runs in tasks.items():
            for run, p in enumerate(runs):
                infra = model == "small" and task == "B1" and run == 3
                out.append({"model": model, "task": task, "tier": TIER[task], "variant": "v0", "instance": "i0",
                            "run": run, "passed": bool(p) and not infra, "infra_error": infra,
                            "failure_mode": None if p else "F5", "first_unmet": None if p else "P",
                            "terminal_flag": None, "tokens_in": 100 * (run + 1), "tokens_out": 10,
                            "latency_s": 2.0, "wall_s": 3.0, "busy_s": None})
    return out


@pytest.fixture  # per test: mutmut counts a function as covered only by the tests that call it
def summary():
    return aggregate(records(), META, reference="ref", n_boot=400, infra_threshold=0.5, targets_pct=(80, 30))


def test_config_echoes_every_setting(summary) -> None:
    c = summary.config
    assert c["reference"] == "ref" and c["margin_pp"] == 10.0 and c["n_boot"] == 400 and c["seed"] == 42
    assert c["infra_as_failure"] is False and c["cluster"] == "unit" and c["alpha"] == 0.05
    assert c["ci_level"] == pytest.approx(0.95) and c["tost_ci_level"] == pytest.approx(0.90)
    assert c["targets_pct"] == [30.0, 80.0]
    assert c["resampling_unit"] == "(variant, instance, run)" and c["overall_scope"] == "overall"
    assert c["interval_method"] == "guarded" and c["interval_text"].startswith("hull of the percentile bootstrap")
    assert c["decision_bound"] == "two-sided" and c["decision_tail"] == 0.025
    assert c["n_min_pairs"] == 35  # floor(1.96^2 * 0.9 / 0.1) + 1
    assert c["infra_threshold"] == 0.5 and c["headline_instance"] == "i0" and c["instances_set_aside"] is False
    assert c["cost_basis"] == "self-hosted"
    other = aggregate(records(), None, reference=None, n_boot=20, cluster="task", alpha=0.1, margin_pp=5.0,
                      interval_method="paper", decision="one-sided", infra_as_failure=True)
    o = other.config
    assert o["resampling_unit"] == "task" and o["cluster"] == "task" and o["alpha"] == 0.1
    assert o["ci_level"] == pytest.approx(0.9) and o["tost_ci_level"] == pytest.approx(0.8)
    assert o["margin_pp"] == 5.0 and o["decision_tail"] == 0.1 and o["infra_as_failure"] is True
    assert o["interval_text"] == "plain percentile bootstrap, as in the AgentFloor paper"
    assert aggregate(records(), None, interval_method="paper", n_boot=20).config["resampling_unit"] == "run"


def test_summary_json_text(summary) -> None:
    text = summary.dumps()
    assert "\n" not in text and json.loads(text) == summary.to_json()
    assert summary.dumps(indent=2).startswith('{\n  "breakdown": {')


def test_documented_defaults() -> None:
    s = aggregate(records()[:8], None)  # ref only: fast even with the default 10,000 draws
    c = s.config
    assert (c["margin_pp"], c["n_boot"], c["seed"], c["alpha"]) == (10.0, 10_000, 42, 0.05)
    assert c["targets_pct"] == [60.0, 70.0, 80.0, 90.0] and c["infra_threshold"] == 0.05


def test_models_section(summary) -> None:
    m = summary.models
    assert summary.model_order == ("small", "ref", "big")  # by size, unknown size last
    assert (m["small"].name, m["small"].params_b, m["small"].size_rank) == ("small", 1.0, 0)
    assert (m["ref"].params_b, m["ref"].size_rank, m["ref"].is_reference) == (7.0, 1, True)
    assert (m["big"].params_b, m["big"].size_rank, m["big"].is_reference) == (None, 2, False)
    assert (m["small"].n_records, m["small"].n_infra, m["small"].is_reference) == (8, 1, False)
    assert (m["ref"].n_records, m["ref"].n_infra) == (8, 0)
    assert m["small"].unreliable_scopes == ()
    assert summary.n_records == 24 and summary.scopes == ("A0", "B", "overall")


def test_warnings(summary) -> None:
    assert "models_meta entries without records: ghost, phantom" in summary.warnings
    assert "no pricing and no size for big: cost unknown, no place on the cost Pareto front" in summary.warnings
    assert not any("reference model" in w for w in summary.warnings)
    lone = aggregate(records(), META, reference="nobody", n_boot=20)
    assert "reference model 'nobody' has no records; paired tests skipped" in lone.warnings
    assert lone.paired.available is False and lone.paired.reason == "reference model 'nobody' has no records"
    assert lone.paired.family_sizes == {} and lone.paired.tests == {}
    none = aggregate(records(), META, reference=None, n_boot=20)
    assert none.paired.available is False and none.paired.reason == "no reference model given"
    assert none.paired.family_sizes == {} and none.paired.tests == {} and none.paired.reference is None
    assert not any("reference model" in w for w in none.warnings)


def test_tcr_cells(summary) -> None:
    t = summary.tcr
    s = t["small"]
    assert (s["A0"].model, s["A0"].scope, s["A0"].n_runs, s["A0"].n_passed, s["A0"].tcr) == ("small", "A0", 4, 3, 0.75)
    assert (s["B"].n_runs, s["B"].n_passed, s["B"].n_infra, s["B"].tcr) == (3, 1, 1, pytest.approx(1 / 3))
    assert (s["overall"].n_runs, s["overall"].n_passed, s["overall"].n_infra) == (7, 4, 1)
    assert s["B"].infra_share == 0.25 and s["B"].unreliable is False  # threshold 0.5
    assert s["B"].tcr_infra_excluded == pytest.approx(1 / 3) and s["B"].tcr_infra_as_failure == 0.25
    assert t["ref"]["B"].tcr == 0.5 and t["ref"]["overall"].tcr == 0.625 and t["ref"]["B"].infra_share == 0.0
    for est in (s["A0"], s["B"], t["big"]["B"]):
        assert est.ci_low <= est.tcr <= est.ci_high
        assert est.ci_low == min(est.boot_low, est.wilson_low) and est.ci_high == max(est.boot_high, est.wilson_high)
    z2 = 1.959963984540054 ** 2
    assert t["big"]["B"].wilson_low == pytest.approx(4 / (4 + z2))  # 4/4 passes
    failing = aggregate(records(), META, n_boot=20, infra_as_failure=True)
    assert (failing.tcr["small"]["B"].n_runs, failing.tcr["small"]["B"].tcr) == (4, 0.25)
    assert failing.tcr["small"]["B"].tcr_infra_excluded == pytest.approx(1 / 3)
    assert failing.tcr["small"]["B"].tcr_infra_as_failure == 0.25
    strict = aggregate(records(), META, n_boot=20)  # default threshold 5 %: a quarter of infra errors is unreliable
    assert strict.tcr["small"]["B"].unreliable and strict.models["small"].unreliable_scopes == ("B", "overall")


def test_paired_counts_by_hand(summary) -> None:
    p = summary.paired
    assert p.available and p.reference == "ref" and p.reason is None and p.margin_pp == 10.0 and p.alpha == 0.05
    assert p.cluster == "unit" and p.n_boot == 400 and p.n_min_pairs == 35
    assert p.family_sizes == {"model_tier": 4, "model_overall": 2}
    a0, b, ov = (p.tests["small"][s] for s in ("A0", "B", "overall"))
    # small vs ref on A01: runs 0..3 give (1,1) (0,1) (1,1) (1,0): b = 1, c = 1
    assert (a0.model, a0.reference, a0.scope, a0.n_pairs, a0.mcnemar_b, a0.mcnemar_c) == ("small", "ref", "A0", 4, 1, 1)
    assert (a0.tcr_model, a0.tcr_ref, a0.delta_pp) == (0.75, 0.75, 0.0)
    assert (a0.n_unpaired_model, a0.n_unpaired_ref) == (0, 0)
    # on B1 run 3 of small is an infra error: 3 pairs (0,1) (0,0) (1,1) and one lone reference run
    assert (b.n_pairs, b.mcnemar_b, b.mcnemar_c, b.n_unpaired_model, b.n_unpaired_ref) == (3, 0, 1, 0, 1)
    assert b.tcr_model == pytest.approx(1 / 3) and b.tcr_ref == pytest.approx(2 / 3)
    assert b.delta_pp == pytest.approx(-100 / 3)
    assert (ov.n_pairs, ov.mcnemar_b, ov.mcnemar_c, ov.n_unpaired_ref) == (7, 1, 2, 1)
    big = p.tests["big"]["overall"]
    assert (big.mcnemar_b, big.mcnemar_c, big.tcr_model, big.tcr_ref) == (3, 0, 1.0, 0.625)
    assert big.p_mcnemar == 0.25  # 2 * (1/2)^3
    assert p.tests["big"]["B"].p_mcnemar == 0.5 and p.tests["big"]["A0"].p_mcnemar == 1.0
    # Holm within each family: overall {small: 1.0, big: 0.25} -> big 2 * 0.25
    assert big.holm_family == "model_overall" and big.p_mcnemar_holm == 0.5
    assert ov.p_mcnemar_holm == 1.0 and a0.holm_family == "model_tier"
    for t in (a0, b, ov, big):
        assert t.ci95_low_pp <= t.delta_pp <= t.ci95_high_pp and t.ci90_low_pp >= t.ci95_low_pp
        assert t.ci90_high_pp <= t.ci95_high_pp and t.margin_pp == 10.0
        assert t.p_noninferiority_holm >= t.p_noninferiority and t.p_equivalence_holm >= t.p_equivalence
    for t in (a0, b, ov):
        assert t.noninferiority_verdict == "insufficient evidence"  # 7 pairs or fewer, 35 needed
    assert big.noninferiority_verdict == "yes" and big.noninferior
    for t in (a0, b, ov, big):  # a Holm claim needs the unadjusted claim and the adjusted p below alpha / 2
        assert t.noninferior_holm == (t.noninferior and t.p_noninferiority_holm < 0.025)
        assert t.equivalent_holm == (t.equivalent and t.p_equivalence_holm < 0.025)
    assert "ref" not in p.tests
    failing = aggregate(records(), META, reference="ref", n_boot=20, infra_as_failure=True).paired.tests["small"]["B"]
    assert (failing.n_pairs, failing.mcnemar_b, failing.mcnemar_c, failing.n_unpaired_ref) == (4, 0, 1, 0)


def test_reliability_by_hand(summary) -> None:
    r = summary.reliability["small"]
    a0, b, ov = r["A0"], r["B"], r["overall"]
    assert (a0.model, a0.scope, a0.n_items, a0.max_runs) == ("small", "A0", 1, 4)
    # A01: n = 4 runs, c = 3 passes. pass@k = 1 - C(1,k)/C(4,k); pass^k = C(3,k)/C(4,k)
    assert [pt.pass_at_k for pt in a0.points] == pytest.approx([0.75, 1.0, 1.0, 1.0])
    assert [pt.pass_hat_k for pt in a0.points] == pytest.approx([0.75, 0.5, 0.25, 0.0])
    assert [pt.k for pt in a0.points] == [1, 2, 3, 4] and [pt.n_items for pt in a0.points] == [1, 1, 1, 1]
    # B1: infra run left out, n = 3, c = 1. pass@2 = 1 - C(2,2)/C(3,2) = 2/3
    assert b.max_runs == 3 and [pt.pass_at_k for pt in b.points] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert [pt.pass_hat_k for pt in b.points] == pytest.approx([1 / 3, 0.0, 0.0])
    # overall averages the items that have at least k runs
    assert (ov.n_items, ov.max_runs) == (2, 4)
    assert [pt.n_items for pt in ov.points] == [2, 2, 2, 1]
    assert ov.points[0].pass_at_k == pytest.approx((0.75 + 1 / 3) / 2)
    assert ov.points[3].pass_at_k == 1.0 and ov.points[3].pass_hat_k == 0.0
    failing = aggregate(records(), META, n_boot=20, infra_as_failure=True).reliability["small"]["B"]
    assert failing.max_runs == 4 and failing.points[0].pass_at_k == 0.25


def test_cost_by_hand(summary) -> None:
    c = summary.cost
    s_a0, s_b = c["small"]["A0"], c["small"]["B"]
    run_cost = 0.5 * 2.0 / 3600  # default $0.50/h for a sized model without a price, 2 s busy
    assert (s_a0.model, s_a0.scope, s_a0.n_runs, s_a0.n_passed, s_a0.tcr) == ("small", "A0", 4, 3, 0.75)
    assert s_a0.cost_per_run == pytest.approx(run_cost) and s_a0.total_cost_usd == pytest.approx(4 * run_cost)
    assert s_a0.cost_per_pass == pytest.approx(4 * run_cost / 3)
    assert s_a0.cloud_cost_per_run == pytest.approx(0.5 * 2.0 / 3600)  # <= 4 B: $0.50/h
    assert s_a0.mean_latency_s == 2.0 and s_a0.latency_per_pass == pytest.approx(8 / 3)
    assert s_a0.mean_wall_s == 3.0 and s_a0.wall_per_pass == pytest.approx(4.0)
    assert (s_a0.tokens_in_total, s_a0.tokens_out_total) == (1000, 40)
    assert (s_a0.mean_tokens_in, s_a0.mean_tokens_out) == (250.0, 10.0)
    assert (s_b.n_runs, s_b.n_infra, s_b.tokens_in_total) == (3, 1, 600)
    assert s_b.infra_cost_usd == pytest.approx(run_cost)  # the infra run's cost is reported, not charged
    assert s_a0.infra_cost_usd is None
    ref = c["ref"]["overall"]
    assert ref.cost_per_run == pytest.approx(3.6 * 2.0 / 3600)  # its own hourly price
    assert ref.cloud_cost_per_run == pytest.approx(1.5 * 2.0 / 3600)  # 7 B: $1.50/h
    assert c["big"]["overall"].cost_per_run is None
    assert summary.pareto["A0"] == ["small"]  # big has no cost; ref costs more for the same 75 % on A0
    assert summary.pareto["overall"] == ["small", "ref"]


def test_breakdown_and_diagnostics_cells(summary) -> None:
    bd = summary.breakdown["small"]["A0"]
    assert (bd.model, bd.scope, bd.n_failed, bd.n_infra) == ("small", "A0", 1, 0)
    assert bd.failure_mode["F5"] == 1 and bd.first_unmet["P"] == 1 and bd.terminal_flag["none"] == 1
    assert summary.breakdown["small"]["B"].n_infra == 1 and summary.breakdown["small"]["B"].n_failed == 2


def test_recipes_wire_the_chosen_models_figures(summary) -> None:
    for tier in ("A0", "B"):
        for key, target in (("80", 80.0), ("30", 30.0)):
            r = summary.recipes[tier][key]
            assert (r.tier, r.target_pct) == (tier, target)
            expected = [m for m in summary.model_order
                        if summary.tcr[m][tier].ci_low is not None and 100 * summary.tcr[m][tier].ci_low >= target]
            assert list(r.qualifying) == expected
            if r.model is None:
                assert (r.params_b, r.tcr, r.ci_low, r.ci_high, r.cost_per_pass) == (None,) * 5
                continue
            est, cs = summary.tcr[r.model][tier], summary.cost[r.model][tier]
            assert r.model == expected[0] and r.params_b == summary.models[r.model].params_b
            assert (r.tcr, r.ci_low, r.ci_high) == (est.tcr, est.ci_low, est.ci_high)
            assert (r.cost_per_pass, r.wall_per_pass) == (cs.cost_per_pass, cs.wall_per_pass)
    assert summary.recipes["A0"]["30"].model is not None  # the wiring above was exercised


def _est(model: str, ci_low: float | None, tier: str = "A") -> TcrEstimate:
    return TcrEstimate(model=model, scope=tier, n_runs=10, n_passed=7, n_infra=0, n_units=10, tcr=0.7,
                       ci_low=ci_low, ci_high=0.9)


def _cost(model: str, per_pass: float, tier: str = "A") -> CostStats:
    return CostStats(model=model, scope=tier, n_runs=10, n_passed=7, n_infra=0, tcr=0.7, total_cost_usd=1.0,
                     cost_per_run=0.1, cost_per_pass=per_pass, infra_cost_usd=None, mean_wall_s=1.0,
                     wall_per_pass=per_pass * 10, mean_latency_s=1.0, latency_per_pass=1.0, tokens_in_total=0,
                     tokens_out_total=0, mean_tokens_in=None, mean_tokens_out=None)


def test_recipe_bound_is_inclusive_and_smallest_wins() -> None:
    tcr = {"tiny": {"A": _est("tiny", 0.595)}, "zero": {"A": _est("zero", 0.6)}, "mid": {"A": _est("mid", 0.9)},
           "api": {"A": _est("api", 0.95)}}
    params = {"tiny": 0.5, "zero": 0.0, "mid": 8.0, "api": None}
    cost = {m: {"A": _cost(m, i + 1.0)} for i, m in enumerate(tcr)}
    out = deployment_recipes(tcr, params, ["A"], targets_pct=[60, 72.5], cost=cost)
    r = out["A"]["60"]
    assert r.qualifying == ("zero", "mid", "api")  # 59.5 % misses 60 %, exactly 60 % clears it
    assert (r.model, r.params_b, r.ci_low, r.ci_high, r.tcr) == ("zero", 0.0, 0.6, 0.9, 0.7)
    assert (r.cost_per_pass, r.wall_per_pass) == (2.0, 20.0)
    assert out["A"]["72.5"].model == "mid" and out["A"]["72.5"].target_pct == 72.5
    bare = deployment_recipes(tcr, params, ["A"], targets_pct=[60])["A"]["60"]
    assert bare.model == "zero" and bare.cost_per_pass is None and bare.wall_per_pass is None
    none = deployment_recipes(tcr, params, ["A"], targets_pct=[99])["A"]["99"]
    assert (none.model, none.params_b, none.tcr, none.qualifying) == (None, None, None, ())


def test_size_order() -> None:
    assert size_order({"b": 0.5, "a": 0.0, "c": None, "d": 0.5}) == ["a", "b", "d", "c"]
    assert size_order({"b": 0.5, "a": 0.0}, ["b"]) == ["b"]  # only the models asked about
    assert math.isclose(0.0, 0.0)


def test_building_blocks_documented_defaults() -> None:
    from pytest_agentfloor.stats import build_table, compare_to_reference, compute_tcr

    t = build_table(records())
    base = dict(n_boot=60, seed=1, cluster="unit", infra_as_failure=False)
    assert compute_tcr(t, **base) == compute_tcr(t, **base, alpha=0.05, interval_method="guarded",
                                                 infra_threshold=0.05)
    assert compute_tcr(t, **base)["small"]["B"].unreliable  # 25 % infra errors against the 5 % default
    paired = compare_to_reference(t, "ref", margin_pp=10.0, **base)
    assert paired == compare_to_reference(t, "ref", margin_pp=10.0, **base, alpha=0.05, interval_method="guarded",
                                          decision="two-sided")
    assert (paired.alpha, paired.interval_method, paired.decision) == (0.05, "guarded", "two-sided")


def test_holm_claims_that_survive_and_a_family_member_with_one_pair() -> None:
    recs = []
    for model in ("ref", "same", "lone"):
        for task, tier in (("A01", "A0"), ("B1", "B")):
            for run in range(60 if model != "lone" else 1):
                recs.append({"model": model, "task": task, "tier": tier, "variant": "v0", "instance": "i0",
                             "run": run, "passed": run % 3 != 0})
    p = aggregate(recs, None, reference="ref", n_boot=200).paired
    same, lone = p.tests["same"]["A0"], p.tests["lone"]["A0"]
    assert same.n_pairs == 60 and same.noninferior and same.equivalent  # 60 ties: well inside +-10 pp
    assert same.noninferior_holm and same.equivalent_holm and same.p_noninferiority_holm < 0.025
    assert lone.n_pairs == 1 and lone.holm_family == "model_tier" and lone.p_mcnemar_holm == 1.0
    assert lone.p_noninferiority_holm is not None and lone.p_equivalence_holm is not None
    assert p.family_sizes == {"model_tier": 4, "model_overall": 2}
    # Holm over the four tier tests: the two 'same' tests share the smallest p, scaled by 4 and 3
    ps = sorted(t.p_noninferiority for m in ("same", "lone") for sc, t in p.tests[m].items() if sc != "overall")
    assert same.p_noninferiority_holm == pytest.approx(min(1.0, 4 * ps[0]))


def test_settings_reach_every_section() -> None:
    from pytest_agentfloor.stats import build_table, compute_reliability, compute_tcr

    recs = records()
    t = build_table(recs)
    s = aggregate(recs, None, reference="ref", n_boot=60, seed=3, alpha=0.1, infra_as_failure=True,
                  interval_method="paper", infra_threshold=0.5)
    assert s.tcr == compute_tcr(t, n_boot=60, seed=3, cluster="run", infra_as_failure=True, alpha=0.1,
                                interval_method="paper", infra_threshold=0.5)
    assert s.reliability == compute_reliability(t, infra_as_failure=True)
    assert s.paired.alpha == 0.1 and s.paired.tests["small"]["B"].n_pairs == 4
    assert s.tcr["small"]["B"].ci_low == s.tcr["small"]["B"].boot_low  # the paper method: no Wilson hull
    assert s.cost["small"]["B"].n_runs == 4 and s.cost["small"]["B"].tcr == 0.25


def test_cost_cells_of_a_last_model_without_runs_or_prices() -> None:
    from pytest_agentfloor.stats import build_table, compute_cost

    recs = [{"model": "a", "task": "A01", "tier": "A0", "variant": "v0", "instance": "i0", "run": r,
             "passed": True, "latency_s": 1.0, "cost_usd": 0.5} for r in range(2)]
    recs += [{"model": "z", "task": "A01", "tier": "A0", "variant": "v0", "instance": "i0", "run": r,
              "passed": False, "infra_error": True} for r in range(2)]
    c = compute_cost(build_table(recs), infra_as_failure=False)
    z = c["z"]["overall"]
    assert (z.n_runs, z.n_passed, z.n_infra, z.tcr, z.cost_per_run, z.infra_cost_usd) == (0, 0, 2, None, None, None)
    assert z.mean_latency_s is None and z.tokens_in_total == 0 and z.cost_per_pass is None
    assert c["a"]["A0"].cost_per_run == 0.5 and c["a"]["A0"].cost_per_pass == 0.5 and c["a"]["A0"].tcr == 1.0
    assert c["a"]["A0"].cloud_cost_per_run is None  # recorded costs only: no cloud figure
