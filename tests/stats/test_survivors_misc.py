"""Hand-worked cases for stats survivors of the mutation run (issue 20): diagnostics of a model that
only had infra errors, token and hourly pricing, the cloud cost per pass, the recipe boundary and
models without a size, and what ``aggregate`` passes on to the instance ablation, the paired
section, the unpriced warning and the judge section. Every expected value is worked out in a
comment; none is computed by the function under test."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from pytest_agentfloor.stats import TcrEstimate, aggregate, build_table, compute_cost, deployment_recipes
from pytest_agentfloor.stats.cost import run_costs
from pytest_agentfloor.stats.diagnostics import compute_diagnostics
from pytest_agentfloor.stats.recipes import clears


def rec(model: str = "m", task: str = "A1", tier: str = "A", instance: str = "i0", run: int = 0,
        passed: bool = True, **extra) -> dict:
    return {"model": model, "task": task, "tier": tier, "variant": "v0", "instance": instance, "run": run,
            "passed": passed, **extra}


def est(model: str, tier: str, ci_low: float | None, tcr: float = 0.9) -> TcrEstimate:
    return TcrEstimate(model=model, scope=tier, n_runs=50, n_passed=int(tcr * 50), n_infra=0, n_units=50,
                       tcr=tcr, ci_low=ci_low, ci_high=1.0)


# --- diagnostics ------------------------------------------------------------------------------------

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


# --- run_costs and compute_cost ---------------------------------------------------------------------

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


# --- recipes ----------------------------------------------------------------------------------------

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


# --- aggregate: what it passes on -------------------------------------------------------------------

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
    s = aggregate(recs, {"m": {"params_b": 1.0}}, n_boot=50, infra_as_failure=True, alpha=0.1)
    cell = {c.instance: c for c in s.instance_ablation}["i1"]
    assert (cell.n_runs, cell.n_passed, cell.n_infra) == (3, 1, 1)
    assert cell.tcr == pytest.approx(1 / 3)
    lo, hi = _wilson(1, 3, float(norm.ppf(0.95)))  # 0.07827, 0.74647 (at z = 1.96: 0.0615, 0.7923)
    assert (cell.ci_low, cell.ci_high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    assert (lo, hi) == (pytest.approx(0.07827, abs=1e-5), pytest.approx(0.74647, abs=1e-5))
    scored = aggregate(recs, {"m": {"params_b": 1.0}}, n_boot=50, infra_as_failure=False, alpha=0.1)
    i1 = {c.instance: c for c in scored.instance_ablation}["i1"]
    assert (i1.n_runs, i1.n_passed, i1.n_infra) == (2, 1, 1)  # the infra run left out


def test_aggregate_hands_the_decision_bound_to_the_paired_section() -> None:
    """x_aggregate__mutmut_148: decision='one-sided' reaches the paired tests (the default is two-sided).
    Guarded Tango with no discordant pair needs n > z²(1 - m)/m pairs at margin m = 0.1:
    one-sided z = 1.6449, z² = 2.7055, so n > 24.35: 25 pairs (two-sided z = 1.96 would need 35)."""
    recs = [rec(model=m, run=r) for m in ("ref", "x") for r in range(3)]
    s = aggregate(recs, {"ref": {"params_b": 1.0}, "x": {"params_b": 2.0}}, reference="ref", n_boot=50,
                  decision="one-sided")
    assert s.paired.decision == "one-sided"
    assert s.paired.n_min_pairs == 25
    assert s.config["decision_bound"] == "one-sided" and s.config["n_min_pairs"] == 25


def test_aggregate_names_every_unpriced_model_in_one_warning() -> None:
    """x_aggregate__mutmut_215: the model names are joined with ', '."""
    recs = [rec(model=m, latency_s=1.0) for m in ("beta", "alpha", "sized")]
    s = aggregate(recs, {"sized": {"params_b": 3.0}}, n_boot=50)
    assert ("no pricing and no size for alpha, beta: cost unknown, no place on the cost Pareto front"
            in s.warnings)


def test_aggregate_reports_who_judged() -> None:
    """x_aggregate__mutmut_341, x_aggregate__mutmut_358: the judge section is computed from the records (not None or
    empty). 2 + 1 judge verdicts, 1 keyword verdict, 1 cache hit of 1 + 1 + 1 lookups."""
    recs = [rec(judge_model="j", judge_verdicts=2, keyword_verdicts=1, judge_cached=1, judge_requests=1,
                judge_cost_usd=0.5, judge_latency_s=2.0),
            rec(run=1, judge_model="j", judge_verdicts=1, judge_requests=1, judge_cost_usd=0.25,
                judge_latency_s=1.0)]
    s = aggregate(recs, {"m": {"params_b": 1.0}}, n_boot=50)
    assert set(s.judge) == {"m", "overall"}
    j = s.judge["m"]
    assert (j.judges, j.judge_verdicts, j.keyword_verdicts, j.cache_hits, j.judge_requests) == (("j",), 3, 1, 1, 2)
    assert j.hit_rate == pytest.approx(1 / 3) and j.judge_cost_usd == 0.75 and j.judge_latency_s == 3.0
    assert s.to_json()["judge"]["overall"]["judge_verdicts"] == 3
