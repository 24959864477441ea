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
