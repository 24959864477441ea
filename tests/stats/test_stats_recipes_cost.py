"""Deployment recipes, size ordering, Pareto set, cost per run/pass, failure breakdowns."""

from __future__ import annotations

import pytest

from pytest_agentfloor.stats import (
    TcrEstimate,
    aggregate,
    build_table,
    compute_breakdown,
    compute_cost,
    deployment_recipes,
    pareto_front,
    size_order,
)
from pytest_agentfloor.stats.cost import has_cost_basis
import math
from pytest_agentfloor.stats.cost import run_costs
from pytest_agentfloor.stats.recipes import clears


def _est(model: str, tier: str, tcr: float, low: float | None) -> TcrEstimate:
    return TcrEstimate(model=model, scope=tier, n_runs=100, n_passed=int(tcr * 100), n_infra=0, n_units=25,
                       tcr=tcr, ci_low=low, ci_high=min(1.0, tcr + 0.05))


def test_size_order_unknown_sizes_last_by_name() -> None:
    params = {"zeta": 3.0, "api-b": None, "alpha": 3.0, "tiny": 0.5, "api-a": None}
    assert size_order(params) == ["tiny", "alpha", "zeta", "api-a", "api-b"]


def test_recipes_hand_worked() -> None:
    params = {"small": 1.0, "mid": 3.0, "big": 24.0, "api": None}
    tcr = {
        "small": {"A": _est("small", "A", 0.72, 0.65), "B": _est("small", "B", 0.3, 0.2)},
        "mid": {"A": _est("mid", "A", 0.86, 0.80), "B": _est("mid", "B", 0.75, 0.69)},  # 0.80 clears 80 exactly
        "big": {"A": _est("big", "A", 0.88, 0.79), "B": _est("big", "B", 0.8, 0.71)},
        "api": {"A": _est("api", "A", 0.97, 0.93), "B": _est("api", "B", 0.5, None)},
    }
    r = deployment_recipes(tcr, params, ["A", "B"])
    assert {t: r["A"][t].model for t in r["A"]} == {"60": "small", "70": "mid", "80": "mid", "90": "api"}
    assert r["A"]["90"].params_b is None and r["A"]["90"].ci_low == 0.93
    assert r["A"]["70"].qualifying == ("mid", "big", "api")
    assert {t: r["B"][t].model for t in r["B"]} == {"60": "mid", "70": "big", "80": None, "90": None}
    none = r["B"]["80"]
    assert none.tcr is None and none.qualifying == () and none.target_pct == 80.0


def test_pareto_hand_worked() -> None:
    pts = {
        "a": (1.0, 0.5),
        "b": (2.0, 0.6),
        "b_twin": (2.0, 0.6),   # identical points do not dominate each other
        "c": (2.0, 0.5),        # dominated by a (cheaper, same TCR)
        "d": (0.5, 0.2),
        "e": (3.0, 0.6),        # dominated by b (same TCR, dearer)
        "f": (0.5, 0.1),        # dominated by d
        "g": (None, 0.9),       # no cost: skipped
    }
    assert pareto_front(pts) == ["d", "a", "b", "b_twin"]
    assert pareto_front({}) == []


def _rec(model: str, task: str, tier: str, run: int, passed: bool, cost: float, wall: float, **kw) -> dict:
    return {"model": model, "task": task, "tier": tier, "variant": "v0", "instance": "i0", "run": run,
            "passed": passed, "infra_error": kw.pop("infra", False), "cost_usd": cost, "wall_s": wall,
            "latency_s": wall / 2, "tokens_in": 100, "tokens_out": 10, **kw}


def test_cost_per_run_and_pass() -> None:
    recs = [_rec("m", "A1", "A", 0, True, 0.01, 2.0), _rec("m", "A1", "A", 1, False, 0.03, 4.0),
            _rec("m", "A1", "A", 2, True, 0.02, 3.0), _rec("m", "A1", "A", 3, False, 0.5, 60.0, infra=True),
            _rec("z", "A1", "A", 0, False, 0.0, 1.0)]
    cost = compute_cost(build_table(recs), infra_as_failure=False)
    c = cost["m"]["A"]
    assert (c.n_runs, c.n_passed, c.n_infra) == (3, 2, 1)
    assert c.cost_per_run == pytest.approx(0.02) and c.cost_per_pass == pytest.approx(0.03)
    assert c.cost_per_pass == pytest.approx(c.cost_per_run / c.tcr)
    assert c.infra_cost_usd == pytest.approx(0.5) and c.total_cost_usd == pytest.approx(0.06)
    assert c.mean_wall_s == pytest.approx(3.0) and c.wall_per_pass == pytest.approx(4.5)
    assert c.latency_per_pass == pytest.approx(2.25) and c.tokens_in_total == 300 and c.mean_tokens_out == 10
    z = cost["z"]["overall"]
    assert z.n_passed == 0 and z.cost_per_pass is None and z.wall_per_pass is None and z.cost_per_run == 0.0
    counted = compute_cost(build_table(recs), infra_as_failure=True)["m"]["A"]
    assert counted.n_runs == 4 and counted.cost_per_pass == pytest.approx(0.28)


def test_breakdown_counts_failed_non_infra_runs() -> None:
    recs = [
        _rec("m", "B1", "B", 0, False, 0, 1, failure_mode="F5", first_unmet="P", terminal_flag="budget"),
        _rec("m", "B1", "B", 1, False, 0, 1, failure_mode="F5", first_unmet="Q"),
        _rec("m", "B1", "B", 2, False, 0, 1),
        _rec("m", "B1", "B", 3, True, 0, 1),
        _rec("m", "B1", "B", 4, False, 0, 1, infra=True, failure_mode="F4"),
        _rec("m", "C1", "C", 0, False, 0, 1, failure_mode="F9", terminal_flag="other"),
    ]
    table = build_table(recs)
    bd = compute_breakdown(table)["m"]
    b = bd["B"]
    assert (b.n_failed, b.n_infra) == (3, 1)
    assert b.failure_mode["F5"] == 2 and b.failure_mode["none"] == 1 and b.failure_mode["F4"] == 0
    assert b.first_unmet["P"] == 1 and b.first_unmet["Q"] == 1 and b.first_unmet["none"] == 1
    assert b.terminal_flag["budget"] == 1 and b.terminal_flag["none"] == 2
    for mapping in (b.failure_mode, b.first_unmet, b.terminal_flag):
        assert sum(mapping.values()) == b.n_failed
    assert bd["C"].failure_mode["F9"] == 1 and bd["overall"].n_failed == 4
    assert any("F9" in w for w in table.warnings)


@pytest.mark.parametrize("meta, expected", [
    (None, False), ({}, False), ({"pricing": None}, False), ({"pricing": "free"}, False),
    ({"pricing": {"input_per_mtok": None, "hourly_usd": None}}, False),
    ({"params_b": 0.5}, True), ({"pricing": {"hourly_usd": 0.0}}, True),
    ({"pricing": {"input_per_mtok": 1.0}}, True), ({"pricing": {"output_per_mtok": 2.0}}, True),
])
def test_has_cost_basis(meta, expected: bool) -> None:
    assert has_cost_basis(meta) is expected


def test_unknown_cost_warnings_say_why() -> None:
    """A model with no way to be priced and a priced model whose runs recorded nothing to charge (no busy
    time, latency or tokens) both have unknown cost, for different reasons, each named in its warning."""
    def rec(model: str, **extra) -> dict:
        return {"model": model, "task": "A1", "tier": "A", "variant": "v0", "instance": "i0", "run": 0,
                "passed": True, **extra}
    recs = [rec("bare", latency_s=1.0), rec("hourly"), rec("tokens"), rec("sized", latency_s=2.0)]
    meta = {"hourly": {"pricing": {"hourly_usd": 1.0}}, "tokens": {"pricing": {"input_per_mtok": 3.0}},
            "sized": {"params_b": 1.0}}
    s = aggregate(recs, meta, n_boot=10)
    assert {w for w in s.warnings if "cost unknown" in w} == {
        "no pricing and no size for bare: cost unknown, no place on the cost Pareto front",
        "no busy time, latency or token counts recorded for hourly, tokens: cost unknown, no place on the cost "
        "Pareto front",
    }
    assert s.cost["sized"]["overall"].cost_per_run == pytest.approx(0.50 * 2.0 / 3600)  # default $0.50/h, 2 s


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


def est(model: str, tier: str, ci_low: float | None, tcr: float = 0.9) -> TcrEstimate:
    return TcrEstimate(model=model, scope=tier, n_runs=50, n_passed=int(tcr * 50), n_infra=0, n_units=50,
                       tcr=tcr, ci_low=ci_low, ci_high=1.0)


META = {
    "api-in": {"pricing": {"input_per_mtok": 3.0}},        # no output price: output tokens cost nothing
    "api-out": {"pricing": {"output_per_mtok": 15.0}},     # no input price: input tokens cost nothing
    "local": {"params_b": 7},                              # default $0.50/h self-hosted, cloud tier $1.50/h
    "odd": {"params_b": 2.0, "pricing": "negotiated"},     # not a mapping: ignored, the size decides
}


def _cost_records() -> list[dict]:
    tok = dict(tokens_in=500_000, tokens_out=200_000, latency_s=3600.0)
    return [rec(model="api-in", **tok), rec(model="api-out", **tok),
            rec(model="local", busy_s=1800.0, **tok),                                   # busy 0.5 h
            rec(model="local", run=1, passed=False, tokens_in=1, tokens_out=1, latency_s=720.0),  # no busy_s: 0.2 h
            rec(model="odd", busy_s=360.0, **tok)]                                      # busy 0.1 h


def test_run_costs_token_bills_and_busy_hours_by_hand() -> None:
    """x_run_costs__mutmut_22, x_run_costs__mutmut_38, x_run_costs__mutmut_43, x_run_costs__mutmut_44,
    x_run_costs__mutmut_46, x_run_costs__mutmut_52: per-token bills with one price missing, and hourly
    rates on busy hours (busy_s, else latency) after a token-priced model."""
    table = build_table(_cost_records())
    assert table.model_names == ("api-in", "api-out", "local", "odd")
    costs = run_costs(table, META)
    for basis in ("self-hosted", "cloud GPU"):
        c = costs[basis]
        # _43 (missing output price as 1.0: +0.2) and _44 (/ 1000001: 1.4999985): 3 $/Mtok x 0.5 Mtok = $1.50
        assert c[0] == 1.5
        # _38 (missing input price as 1.0: +0.5): 15 $/Mtok x 0.2 Mtok = $3.00
        assert c[1] == 3.0
    # _46 (break after the first token-priced model: every later model NaN); _52 (busy_s known: None / 3600)
    # local: 0.5 h busy (not the 1 h latency) and 0.2 h from latency where busy_s is missing
    assert costs["self-hosted"][2] == 0.25 and costs["cloud GPU"][2] == 0.75    # $0.50/h, $1.50/h x 0.5 h
    assert costs["self-hosted"][3] == pytest.approx(0.1, rel=1e-12)             # $0.50/h x 0.2 h
    assert costs["cloud GPU"][3] == pytest.approx(0.3, rel=1e-12)               # $1.50/h x 0.2 h
    # _22 (a pricing that is not a mapping replaced by None: AttributeError); 2 B: $0.50/h both ways x 0.1 h
    assert costs["self-hosted"][4] == pytest.approx(0.05, rel=1e-12)
    assert costs["cloud GPU"][4] == pytest.approx(0.05, rel=1e-12)


def test_cloud_cost_per_pass_by_hand() -> None:
    """x_compute_cost__mutmut_149, x_compute_cost__mutmut_169: local passed 1 of 2 runs costing $0.75 and $0.30 on the
    cloud basis ($0.25 and $0.10 self-hosted): per run 1.05/2 = 0.525, per pass 1.05/1."""
    table = build_table(_cost_records())
    c = compute_cost(table, infra_as_failure=False, costs=run_costs(table, META))["local"]["overall"]
    assert (c.n_runs, c.n_passed) == (2, 1)
    assert c.cloud_cost_per_run == pytest.approx(0.525, rel=1e-12)
    assert c.cloud_cost_per_pass == pytest.approx(1.05, rel=1e-12)
    assert c.cost_per_pass == pytest.approx(0.35, rel=1e-12)
    api_in = compute_cost(table, infra_as_failure=False, costs=run_costs(table, META))["api-in"]["A"]
    assert api_in.cloud_cost_per_pass == 1.5  # one run, passed: $1.50 per pass


def test_clears_is_inclusive_at_the_tolerance() -> None:
    """x_clears__mutmut_8: a lower bound of exactly target - 1e-9 percent still clears (>=, not >).
    (80 - 1e-9) / 100 times 100.0 gives back 79.999999999 exactly in binary floating point."""
    edge = (80 - 1e-9) / 100
    assert 100.0 * edge == 79.999999999
    assert clears(est("m", "A", edge), 80) is True
    assert clears(est("m", "A", math.nextafter(edge, 0.0)), 80) is False
    assert clears(est("m", "A", None), 0) is False and clears(None, 0) is False


def test_recipes_consider_models_without_a_params_entry() -> None:
    """x_deployment_recipes__mutmut_3, x_deployment_recipes__mutmut_5: the candidates are the models
    in ``tcr``; a hosted model missing from ``params_b`` comes last in size order but still qualifies."""
    tcr = {"small": {"A": est("small", "A", 0.65)}, "hosted": {"A": est("hosted", "A", 0.93, tcr=0.97)}}
    r = deployment_recipes(tcr, {"small": 1.0}, ["A"], targets_pct=(60, 90))
    assert r["A"]["60"].model == "small" and r["A"]["60"].qualifying == ("small", "hosted")
    assert r["A"]["90"].model == "hosted" and r["A"]["90"].params_b is None and r["A"]["90"].ci_low == 0.93
