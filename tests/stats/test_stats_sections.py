"""The smaller report sections by hand: who judged, the instance ablation, diagnostics and failure
breakdowns. Expected values are counted from the records in each test (issue 20 mutation survivors)."""

from __future__ import annotations

import pytest

from pytest_agentfloor.stats import aggregate, build_table, compute_breakdown
from pytest_agentfloor.stats.diagnostics import compute_diagnostics, counts_from_trajectory
from pytest_agentfloor.stats.instances import instance_ablation, split_headline
from pytest_agentfloor.stats.judge import compute_judge, wilson as judge_wilson

Z2 = 1.959963984540054 ** 2


def rec(model="m", task="A1", tier="A", instance="i0", run=0, passed=True, **extra) -> dict:
    return {"model": model, "task": task, "tier": tier, "variant": "v0", "instance": instance, "run": run,
            "passed": passed, **extra}


# --- judge -------------------------------------------------------------------------------------------

def test_judge_sums_per_model_and_overall() -> None:
    recs = [rec(model="b", judge_model="j2", judge_verdicts=3, keyword_verdicts=1, judge_fails=2, judge_cached=2,
                judge_requests=1, judge_cost_usd=0.25, judge_latency_s=1.5),
            rec(model="b", run=1, judge_model="j1", judge_verdicts=1, judge_cached=0, judge_requests=1,
                judge_cost_usd=0.5, judge_latency_s=0.25, judge_error=True),
            rec(model="a", judge_model=None, keyword_verdicts=4, judge_verdicts=True, judge_cached=float("nan"),
                judge_requests="3", judge_error="yes")]
    out = compute_judge(recs)
    assert list(out) == ["a", "b", "overall"]
    b = out["b"]
    assert b.judges == ("j1", "j2")
    assert (b.judge_verdicts, b.keyword_verdicts, b.judge_fails, b.cache_hits, b.judge_requests) == (4, 1, 2, 2, 2)
    assert b.hit_rate == 0.5 and b.judge_errors == 1
    assert b.judge_cost_usd == 0.75 and b.judge_latency_s == 1.75
    a = out["a"]  # booleans, NaN and text are not counts; only a literal True is a judge error
    assert (a.judges, a.judge_verdicts, a.cache_hits, a.judge_requests, a.keyword_verdicts) == ((), 0, 0, 0, 4)
    assert a.hit_rate is None and a.judge_errors == 0 and a.judge_cost_usd == 0.0
    o = out["overall"]
    assert o.judges == ("j1", "j2") and o.keyword_verdicts == 5 and o.judge_errors == 1 and o.judge_cost_usd == 0.75
    unpriced = compute_judge([rec(judge_requests=1, judge_cost_usd=None), rec(run=1, judge_cost_usd=0.5)])
    assert unpriced["m"].judge_cost_usd is None  # a request without a price: unknown, never $0.50
    cached_only = compute_judge([rec(judge_requests=0, judge_cost_usd=None, judge_cached=2)])
    assert cached_only["m"].judge_cost_usd == 0.0 and cached_only["m"].hit_rate == 1.0


def test_judge_wilson_edges() -> None:
    assert judge_wilson(0, 0) == (None, None)
    with pytest.raises(ValueError, match=r"^need 0 <= k <= n, got k=4, n=3"):
        judge_wilson(4, 3)
    with pytest.raises(ValueError, match=r"^need 0 <= k <= n, got k=-1, n=3"):
        judge_wilson(-1, 3)
    lo, hi = judge_wilson(3, 3)  # default level 95 %
    assert lo == pytest.approx(3 / (3 + Z2)) and hi == 1.0
    lo, hi = judge_wilson(0, 3)
    assert lo == 0.0 and hi == pytest.approx(Z2 / (3 + Z2))
    assert isinstance(lo, float) and isinstance(hi, float)


# --- instance ablation --------------------------------------------------------------------------------

def test_split_headline_cases() -> None:
    head = [rec(instance="i0"), rec(task="A2", instance="i0")]
    both = head + [rec(instance="i1")]
    assert split_headline(both) == (head, True)
    assert split_headline(both, None) == (both, False)
    assert split_headline(head) == (head, False)  # only the headline instance: nothing set aside
    only_variants = [rec(instance="i1"), rec(instance="i2")]
    assert split_headline(only_variants) == (only_variants, False)
    assert split_headline(both, "i1") == ([rec(instance="i1")], True)


def test_instance_ablation_counts_by_hand() -> None:
    recs = [rec(instance="i0", run=0), rec(instance="i0", run=1, passed=False),
            rec(instance="i1", run=0, passed=True, infra_error=True),  # infra: neither run nor pass
            rec(instance="i1", run=1, passed=True), rec(instance="i1", run=2, passed=False),
            rec(task="B1", tier="B", instance="i0"),  # one instance only: not part of the ablation
            rec(model="n", instance="i1", infra_error=True, passed=False)]
    cells = {(c.model, c.task, c.instance): c for c in instance_ablation(recs, infra_as_failure=False)}
    assert set(cells) == {("m", "A1", "i0"), ("m", "A1", "i1"), ("n", "A1", "i1")}
    i0, i1, n = cells[("m", "A1", "i0")], cells[("m", "A1", "i1")], cells[("n", "A1", "i1")]
    assert (i0.tier, i0.n_runs, i0.n_passed, i0.n_infra, i0.tcr) == ("A", 2, 1, 0, 0.5)
    assert (i1.n_runs, i1.n_passed, i1.n_infra, i1.tcr) == (2, 1, 1, 0.5)
    assert (n.n_runs, n.n_passed, n.n_infra, n.tcr, n.ci_low, n.ci_high) == (0, 0, 1, None, None, None)
    # Wilson 1 of 2 at 95 %: centre 1/2, half width z sqrt(1/2 + z^2/4) / (2 + z^2)
    half = (Z2 ** 0.5) * ((0.5 + Z2 / 4) ** 0.5) / (2 + Z2)
    assert i0.ci_low == pytest.approx(0.5 - half) and i0.ci_high == pytest.approx(0.5 + half)
    failing = {(c.model, c.instance): c for c in instance_ablation(recs, infra_as_failure=True)}
    assert (failing[("m", "i1")].n_runs, failing[("m", "i1")].n_passed) == (3, 1)  # the infra pass is no pass
    assert (failing[("n", "i1")].n_runs, failing[("n", "i1")].tcr) == (1, 0.0)
    cut = [rec(task="C1", tier="C", instance=i, infra_error=True, passed=False) for i in ("i0", "i1")]
    assert not [c for c in instance_ablation(recs + cut, infra_as_failure=False) if c.task == "C1"]
    kept = {(c.task, c.instance): c for c in instance_ablation(recs + cut, infra_as_failure=True)}
    assert kept[("C1", "i0")].tier == "C" and kept[("C1", "i1")].tcr == 0.0
    narrow = {(c.model, c.instance): c for c in instance_ablation(recs, infra_as_failure=False, alpha=0.5)}
    assert narrow[("m", "i0")].ci_high < i0.ci_high  # alpha sets the level


# --- diagnostics ---------------------------------------------------------------------------------------

def test_counts_from_trajectory() -> None:
    traj = {"turns": [{"calls": [{"malformed": True}, {"hallucinated": True, "repeated": True}]},
                      {"calls": None, "leaked_call": True}, {"calls": [{"repeated": True}]}]}
    assert counts_from_trajectory(traj) == {"calls": 3, "turns": 3, "calls_malformed": 1, "calls_hallucinated": 1,
                                            "calls_repeated": 2, "turns_leaked": 1}
    assert counts_from_trajectory({}) == {"calls": 0, "turns": 0, "calls_malformed": 0, "calls_hallucinated": 0,
                                          "calls_repeated": 0, "turns_leaked": 0}


def test_diagnostics_leave_out_infra_runs_and_runs_without_counts() -> None:
    full = dict(calls=4, turns=2, calls_malformed=1, calls_hallucinated=2, calls_repeated=0, turns_leaked=1)
    recs = [rec(run=0, **full), rec(run=1, infra_error=True, **full),
            rec(run=2, **dict(full, calls=True)),  # a boolean is not a count
            rec(run=3), rec(task="B1", tier="B", **dict(full, calls=0, turns=0, calls_malformed=0,
                                                              calls_hallucinated=0, turns_leaked=0))]
    t = build_table(recs)
    d = compute_diagnostics(t, recs)
    a = d["m"]["A"]
    assert (a.model, a.scope, a.n_runs, a.n_runs_missing, a.n_calls) == ("m", "A", 3, 2, 4)
    assert (a.malformed_rate, a.hallucinated_rate, a.repeated_rate, a.leaked_rate) == (0.25, 0.5, 0.0, 0.5)
    assert (a.mean_calls, a.mean_turns) == (4.0, 2.0)
    b = d["m"]["B"]
    assert (b.n_runs, b.n_calls, b.malformed_rate, b.leaked_rate, b.mean_calls) == (1, 0, None, None, 0.0)
    assert d["m"]["overall"].n_runs == 4 and d["m"]["overall"].n_calls == 4


# --- failure breakdown --------------------------------------------------------------------------------

def test_breakdown_counts_the_first_label_too() -> None:
    recs = [rec(run=0, passed=False, failure_mode="F1", first_unmet="A", terminal_flag="truncation"),
            rec(run=1, passed=False, failure_mode=None, first_unmet=None, terminal_flag=None),
            rec(run=2, passed=False, failure_mode="F1", infra_error=True),  # an endpoint failure: not counted
            rec(run=3, passed=True)]
    bd = compute_breakdown(build_table(recs))["m"]
    a = bd["A"]
    assert (a.model, a.scope, a.n_failed, a.n_infra) == ("m", "A", 2, 1)
    assert a.failure_mode["F1"] == 1 and a.failure_mode["none"] == 1 and sum(a.failure_mode.values()) == 2
    assert a.first_unmet["A"] == 1 and a.first_unmet["none"] == 1
    assert a.terminal_flag["truncation"] == 1 and a.terminal_flag["none"] == 1
    assert bd["overall"].failure_mode == a.failure_mode


def test_aggregate_sections_keep_their_cells_apart() -> None:
    recs = [rec(model="x", run=r, passed=r < 2, failure_mode=None if r < 2 else "F6") for r in range(4)] + \
           [rec(model="y", run=r, passed=False, failure_mode="F7") for r in range(4)]
    s = aggregate(recs, None, n_boot=20)
    assert s.breakdown["x"]["A"].failure_mode["F6"] == 2 and s.breakdown["y"]["A"].failure_mode["F7"] == 4
    assert s.breakdown["x"]["A"].model == "x" and s.breakdown["y"]["overall"].scope == "overall"
    assert s.diagnostics["y"]["A"].n_runs == 4 and s.diagnostics["y"]["A"].n_runs_missing == 4
