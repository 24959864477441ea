"""Infrastructure errors, unknown cost, impossible usage figures, instance variants and diagnostics.

Each test reproduces a way the statistics used to give a confident wrong answer (issue 10, 11).
"""

from __future__ import annotations

import pytest

from pytest_agentfloor.stats import aggregate
from pytest_agentfloor.stats.cost import cloud_hourly


def _recs(model: str, tier: str, n: int, passes: int, infra: int = 0, **extra) -> list[dict]:
    out = []
    for i in range(n):
        out.append({"model": model, "task": f"{tier}{i % 5 + 1}", "tier": tier, "variant": f"v{(i // 5) % 5}",
                    "instance": "i0", "run": i // 25, "passed": i < passes and i >= infra, "infra_error": i < infra,
                    "tokens_in": 100, "tokens_out": 10, "latency_s": 2.0, "wall_s": 3.0, "cost_usd": None, **extra})
    return out


def test_a_mostly_failing_endpoint_cannot_buy_a_good_score() -> None:
    # 280 runs, 203 infra errors, 70 of the other 77 pass (90.9 %): flagged, never best / Pareto / recipe
    flaky = _recs("flaky", "E", 280, passes=203 + 70, infra=203)
    steady = _recs("steady", "E", 280, passes=150)
    meta = {"flaky": {"params_b": 1.0}, "steady": {"params_b": 8.0}}
    s = aggregate(flaky + steady, meta, n_boot=500)
    e = s.tcr["flaky"]["E"]
    assert e.unreliable and e.infra_share == pytest.approx(203 / 280)
    assert e.tcr == pytest.approx(70 / 77) and e.tcr_infra_excluded == pytest.approx(70 / 77)
    assert e.tcr_infra_as_failure == pytest.approx(70 / 280)
    assert s.models["flaky"].unreliable_scopes == ("E", "overall")
    assert "flaky" not in s.pareto["E"] and "flaky" not in s.pareto["overall"]
    assert all(r.model != "flaky" for r in s.recipes["E"].values())
    assert any("unreliable endpoint" in w and "flaky on tier E" in w for w in s.warnings)
    j = s.to_json()
    assert j["tcr"]["flaky"]["E"]["unreliable"] is True and j["config"]["infra_threshold"] == 0.05
    # at 5 % or below the flag stays off; the threshold is an option
    assert not aggregate(_recs("ok", "A", 100, passes=90, infra=5), {}, n_boot=100).tcr["ok"]["A"].unreliable
    assert aggregate(_recs("ok", "A", 100, passes=90, infra=5), {}, n_boot=100,
                     infra_threshold=0.04).tcr["ok"]["A"].unreliable


def test_unknown_cost_is_unknown_not_zero() -> None:
    recs = _recs("mystery", "A", 25, passes=20) + _recs("sized", "A", 25, passes=10)
    s = aggregate(recs, {"mystery": {"params_b": None, "pricing": {}}, "sized": {"params_b": 3.0}}, n_boot=100)
    c = s.cost["mystery"]["A"]
    assert c.cost_per_run is None and c.cost_per_pass is None and c.total_cost_usd is None
    assert "mystery" not in s.pareto["A"] and s.pareto["A"] == ["sized"]
    # sized, unpriced: self-hosted at the default $0.50/h over 2 s busy; cloud GPU tier for <= 4 B is $0.50/h
    assert s.cost["sized"]["A"].cost_per_run == pytest.approx(0.5 * 2 / 3600)
    assert s.cost["sized"]["A"].cloud_cost_per_run == pytest.approx(0.5 * 2 / 3600)
    assert any("cost unknown" in w and "mystery" in w for w in s.warnings)


@pytest.mark.parametrize("params_b,rate", [(0.27, 0.5), (4, 0.5), (5, 1.5), (8, 1.5), (14, 1.5), (17, 2.5),
                                           (20, 2.5), (32, 2.5), (None, None)])
def test_cloud_gpu_tiers(params_b, rate) -> None:
    assert cloud_hourly(params_b) == rate


def test_api_model_costs_its_token_bill_in_both_columns() -> None:
    recs = _recs("api", "A", 10, passes=5)
    s = aggregate(recs, {"api": {"params_b": None, "pricing": {"input_per_mtok": 1.25, "output_per_mtok": 10.0}}},
                  n_boot=100)
    bill = (1.25 * 100 + 10.0 * 10) / 1e6
    assert s.cost["api"]["A"].cost_per_run == pytest.approx(bill)
    assert s.cost["api"]["A"].cloud_cost_per_run == pytest.approx(bill)
    assert s.cost["api"]["A"].cost_per_pass == pytest.approx(bill * 2)


def test_negative_or_absurd_usage_never_enters_the_statistics() -> None:
    recs = _recs("m", "A", 10, passes=5)
    recs[0] = dict(recs[0], tokens_in=-5000, latency_s=-3.0)
    recs[1] = dict(recs[1], tokens_out=10**12)
    s = aggregate(recs, {"m": {"params_b": 1.0}}, n_boot=100)
    c = s.cost["m"]["A"]
    assert c.mean_tokens_in == pytest.approx(100) and c.mean_tokens_out == pytest.approx(10)
    assert c.cost_per_run is not None and c.cost_per_run > 0
    assert any("impossible tokens_in" in w for w in s.warnings)
    assert any("impossible latency_s" in w for w in s.warnings)
    assert any("impossible tokens_out" in w for w in s.warnings)


def test_instance_variants_are_an_ablation_not_pooled() -> None:
    head = _recs("m", "A", 25, passes=25)
    variants = [dict(r, instance=f"i{k}", passed=False) for k in (1, 2) for r in head if r["task"] == "A1"]
    s = aggregate(head + variants, {}, n_boot=100)
    assert s.tcr["m"]["A"].n_runs == 25 and s.tcr["m"]["A"].tcr == 1.0
    assert s.config["instances_set_aside"] is True and s.n_records == 35
    cells = {(c.task, c.instance): c for c in s.instance_ablation}
    assert set(cells) == {("A1", "i0"), ("A1", "i1"), ("A1", "i2")}
    assert cells[("A1", "i0")].tcr == 1.0 and cells[("A1", "i1")].tcr == 0.0
    pooled = aggregate(head + variants, {}, n_boot=100, headline_instance=None)
    assert pooled.tcr["m"]["A"].n_runs == 35 and not pooled.instance_ablation
    # only instance variants recorded: nothing to set aside
    only = aggregate(variants, {}, n_boot=100)
    assert only.tcr["m"]["A"].n_runs == 10 and not only.instance_ablation


def test_diagnostic_rates_pool_calls_per_cell() -> None:
    recs = _recs("m", "B", 4, passes=2, infra=0)
    counts = [(4, 2, 1, 0, 0, 1), (2, 1, 0, 1, 0, 0), (0, 1, 0, 0, 0, 0), (6, 3, 0, 0, 2, 0)]
    for r, (calls, turns, mal, hal, rep, leak) in zip(recs, counts):
        r.update(calls=calls, turns=turns, calls_malformed=mal, calls_hallucinated=hal, calls_repeated=rep,
                 turns_leaked=leak)
    d = aggregate(recs, {}, n_boot=100).diagnostics["m"]["B"]
    assert d.n_calls == 12 and d.malformed_rate == pytest.approx(1 / 12)
    assert d.hallucinated_rate == pytest.approx(1 / 12) and d.repeated_rate == pytest.approx(2 / 12)
    assert d.leaked_rate == pytest.approx(1 / 7)
    assert d.mean_calls == pytest.approx(3.0) and d.mean_turns == pytest.approx(7 / 4)


def test_the_warnings_word_for_word() -> None:
    """The warnings reach the terminal, report.md and summary.json as they are: their whole text."""
    flaky = _recs("flaky", "E", 40, passes=30, infra=10)
    other = [dict(r, model="other", instance="i1") for r in _recs("x", "E", 40, passes=20)]
    s = aggregate(flaky + other, {"ghost": {"params_b": 1.0}}, reference="nobody", n_boot=100, infra_threshold=0.1)
    assert set(s.warnings) == {
        "40 record(s) lack busy_s; excluded from its sums and means",
        "instance variants other than i0 are reported in the instance ablation, not pooled into the tiers",
        "models_meta entries without records: ghost",
        "reference model 'nobody' has no records; paired tests skipped",
        "unreliable endpoint (infra errors above 10% of runs): flaky on tier E, flaky on all tiers; kept out of "
        "best, the Pareto front and the recipes",
        "no pricing and no size for flaky: cost unknown, no place on the cost Pareto front",
    }
