"""Call-site statistics from constructed records, checked against scipy and hand-worked values."""

from __future__ import annotations

import math

import pytest
from scipy.stats import binomtest

from pytest_agentfloor.callsite.stats import summarise, wilson


def rec(model: str, site: str, task: str, passed: bool, *, cost: float = 0.0, tokens: int = 100, run: int = 0,
        infra: bool = False, **facets) -> dict:
    grader = facets.pop("grader", site)
    return {"model": model, "task": task, "tier": "callsite", "variant": "v0", "instance": "i0", "run": run,
            "passed": passed, "infra_error": infra, "tokens_in": tokens, "cost_usd": cost, "kind": "callsite",
            "facets": {"site": site, "grader": grader, "group": facets.pop("group", "g"), **facets}}


def site_records(model: str, site: str, outcomes: list[bool], cost: float = 0.0) -> list[dict]:
    return [rec(model, site, f"{site}-{i:02d}", p, cost=cost) for i, p in enumerate(outcomes)]


def test_accuracy_interval_is_scipy_wilson() -> None:
    recs = site_records("m", "intent", [True] * 17 + [False] * 3)
    s = summarise(recs)
    cell = s.accuracy["intent"]["m"]
    ci = binomtest(17, 20).proportion_ci(confidence_level=0.95, method="wilson")
    assert cell.accuracy == pytest.approx(0.85)
    assert (cell.ci_low, cell.ci_high) == pytest.approx((ci.low, ci.high))
    # 20/20 cannot certify 100%: the lower bound is n / (n + z^2)
    full = summarise(site_records("m", "intent", [True] * 20)).accuracy["intent"]["m"]
    assert full.ci_low == pytest.approx(20 / (20 + 1.959964 ** 2), rel=1e-5)


def test_repeats_of_a_case_do_not_narrow_the_interval() -> None:
    once = summarise(site_records("m", "intent", [True] * 8 + [False] * 2)).accuracy["intent"]["m"]
    thrice = summarise([{**r, "run": k} for r in site_records("m", "intent", [True] * 8 + [False] * 2)
                        for k in range(3)]).accuracy["intent"]["m"]
    assert thrice.n_cases == 10 and thrice.n_records == 30
    assert (thrice.ci_low, thrice.ci_high) == pytest.approx((once.ci_low, once.ci_high))


def test_fractional_wilson_matches_the_integer_formula_at_integers() -> None:
    lo, hi = wilson(7, 10, 0.05)
    z = 1.959963984540054
    p, n = 0.7, 10
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert (lo, hi) == pytest.approx((centre - half, centre + half))


def test_mcnemar_discordant_split_and_holm() -> None:
    # intent: model-only 1, ref-only 7 (p = binom two-sided on 1 of 8); codegen: 0/0 discordant
    ref = site_records("ref", "intent", [True] * 10) + site_records("ref", "codegen", [True] * 5 + [False] * 5)
    mod = site_records("m", "intent", [True] * 3 + [False] * 7) + site_records("m", "codegen", [True] * 5 + [False] * 5)
    ref[0]["passed"] = False  # intent-00: only the model passes
    s = summarise(ref + mod, reference="ref")
    tests = {t.site: t for t in s.tests}
    it = tests["intent"]
    assert (it.n_pairs, it.only_model, it.only_reference) == (10, 1, 7)
    p = binomtest(1, 8, 0.5).pvalue
    assert it.p_value == pytest.approx(p)
    assert tests["codegen"].p_value == 1.0
    # Holm with m = 2: smallest p doubled, the larger one max(previous, p)
    assert it.p_holm == pytest.approx(min(1.0, 2 * p))
    assert tests["codegen"].p_holm == 1.0
    assert p == pytest.approx(18 / 256)  # 2 * P(X <= 1), X ~ Bin(8, 1/2)
    assert it.significant is False


def test_infra_errors_are_not_scored_and_not_paired() -> None:
    recs = site_records("m", "intent", [True, True, False]) + [rec("m", "intent", "intent-09", False, infra=True)]
    cell = summarise(recs).accuracy["intent"]["m"]
    assert (cell.n_cases, cell.n_infra, cell.accuracy) == (3, 1, pytest.approx(2 / 3))


def test_acting_versus_refusing() -> None:
    def act(model, task, actionable, passed, acted, sub=False, hall=False):
        return rec(model, "actuator", task, passed, actionable=actionable, acted=acted, refused=not acted,
                   substitution=sub, hallucinated=hall, grader="actuator")

    recs = [act("m", "a1", True, True, True), act("m", "a2", True, False, False), act("m", "a3", True, False, True, sub=True),
            act("m", "a4", True, True, True),
            act("m", "i1", False, False, True, sub=True), act("m", "i2", False, False, True, hall=True),
            act("m", "i3", False, True, False)]
    a = summarise(recs).actuation[0]
    assert (a.n_actionable, a.n_impossible) == (4, 3)
    assert a.execution_accuracy == pytest.approx(2 / 4)
    assert a.over_actuation == pytest.approx(2 / 3)
    assert (a.substitutions, a.hallucinations) == (2, 1)
    assert a.substitution_share == pytest.approx(2 / 3)
    assert a.refused_actionable == 1


def test_routing_policies_by_hand() -> None:
    # sites: intent (4 cases), planner (4 cases); weights 1/2 each by default (equal per case)
    recs = (site_records("ref", "intent", [True] * 4, cost=0.01) + site_records("ref", "planner", [True] * 4, cost=0.10)
            + site_records("small", "intent", [True] * 4) + site_records("small", "planner", [True, False, False, False])
            + site_records("mid", "intent", [True] * 4) + site_records("mid", "planner", [True, True, True, False]))
    meta = {"ref": {"params_b": None}, "small": {"params_b": 1}, "mid": {"params_b": 8}}
    s = summarise(recs, meta, reference="ref")
    r = {x.policy: x for x in s.routing}
    assert r["all_on_reference"].cost_usd == pytest.approx(0.44)
    assert r["all_on_reference"].accuracy == 1.0 and r["all_on_reference"].saving == 0.0
    assert r["all_on_reference"].cost_per_call == pytest.approx(0.44 / 8)
    # generative site (planner) stays on the reference, intent goes to the best other model, tie -> smaller
    assert r["reference_for_generative"].assignment == {"intent": "small", "planner": "ref"}
    assert r["reference_for_generative"].cost_usd == pytest.approx(0.40)
    assert r["reference_for_generative"].saving == pytest.approx(1 - 0.40 / 0.44)
    # best per site: intent tie among all three -> the smallest known size; planner -> ref (100%)
    assert r["best_per_site"].assignment == {"intent": "small", "planner": "ref"}
    # cheapest: small and mid cost 0; tie broken by routed accuracy (mid 0.875 > small 0.625)
    assert r["single_cheapest"].assignment == {"intent": "mid", "planner": "mid"}
    assert r["single_cheapest"].accuracy == pytest.approx(0.5 * 1.0 + 0.5 * 0.75)
    assert r["single_cheapest"].saving == 1.0


def test_routing_weights_are_configurable() -> None:
    recs = site_records("a", "intent", [True] * 2) + site_records("a", "codegen", [False] * 2)
    s = summarise(recs, weights={"intent": 3, "codegen": 1})
    assert s.weights == {"intent": 0.75, "codegen": 0.25}
    assert s.routing[-1].accuracy == pytest.approx(0.75)


def test_cost_per_call_and_saving_follow_the_call_mix() -> None:
    # intent: 2 cases at $0.01 per call on ref; codegen: 2 cases at $0.10; the agent calls intent 9x as often
    recs = (site_records("ref", "intent", [True] * 2, cost=0.01) + site_records("ref", "codegen", [True] * 2, cost=0.10)
            + site_records("free", "intent", [True] * 2) + site_records("free", "codegen", [False, True]))
    s = summarise(recs, {"free": {"params_b": 1}}, reference="ref", weights={"intent": 9, "codegen": 1})
    r = {x.policy: x for x in s.routing}
    assert r["all_on_reference"].cost_usd == pytest.approx(0.22)  # the sweep: every case once
    assert r["all_on_reference"].cost_per_call == pytest.approx(0.9 * 0.01 + 0.1 * 0.10)
    gen = r["reference_for_generative"]
    assert gen.assignment == {"intent": "free", "codegen": "ref"}
    assert gen.cost_per_call == pytest.approx(0.1 * 0.10)
    assert gen.saving == pytest.approx(1 - 0.010 / 0.019)
    assert gen.accuracy == 1.0


def test_no_records_no_section_and_unknown_reference_warns() -> None:
    assert summarise([{"model": "m", "task": "A1", "tier": "A", "passed": True}]) is None
    s = summarise(site_records("m", "intent", [True]), reference="nobody")
    assert s.tests == [] and any("nobody" in w for w in s.warnings)


def test_hostile_names_from_stored_records_are_rendered_inert() -> None:
    from pytest_agentfloor.report.html import section_html
    from pytest_agentfloor.report.markdown import section_markdown
    from pytest_agentfloor.report.sections import compute_sections
    from pytest_agentfloor.report.terminal import section_text

    recs = site_records("m<script>\x1b[31m", "intent", [True, False])
    sections = compute_sections(recs, {})
    html, md, text = section_html(sections), section_markdown(sections), section_text(sections, width=200)
    assert "<script>" not in html and "\x1b" not in html
    assert "<script>" not in md and "\x1b" not in md
    assert "\x1b[31m" not in text
