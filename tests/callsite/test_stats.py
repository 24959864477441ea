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


def routes(s) -> dict:
    return {(x.policy, x.model): x for x in s.routing}


def test_routing_policies_by_hand() -> None:
    # sites: intent (4 cases), planner (4 cases); weights 1/2 each by default (equal per case)
    recs = (site_records("ref", "intent", [True] * 4, cost=0.01) + site_records("ref", "planner", [True] * 4, cost=0.10)
            + site_records("small", "intent", [True] * 4) + site_records("small", "planner", [True, False, False, False])
            + site_records("mid", "intent", [True] * 4) + site_records("mid", "planner", [True, True, True, False]))
    meta = {"ref": {"params_b": None, "hosted": True}, "small": {"params_b": 1}, "mid": {"params_b": 8}}
    s = summarise(recs, meta, reference="ref")
    r = routes(s)
    assert list(r) == [("all_hosted", "ref"), ("hosted_generation", "ref"), ("local_best_per_site", None),
                       ("local_single", "mid"), ("matched_reference", "ref")]
    hosted = r[("all_hosted", "ref")]
    assert hosted.cost_usd == pytest.approx(0.44) and hosted.base and hosted.label == "all hosted (ref)"
    assert hosted.accuracy == 1.0 and hosted.saving == 0.0
    assert hosted.cost_per_call == pytest.approx(0.44 / 8)
    # generative site (planner) on the hosted model, intent on the best local model, tie -> smaller
    gen = r[("hosted_generation", "ref")]
    assert gen.assignment == {"intent": "small", "planner": "ref"}
    assert gen.cost_usd == pytest.approx(0.40)
    assert gen.saving == pytest.approx(1 - 0.40 / 0.44)
    # all local: the hosted model is never chosen, though it is the most accurate planner
    best = r[("local_best_per_site", None)]
    assert best.assignment == {"intent": "small", "planner": "mid"}
    assert best.accuracy == pytest.approx(0.5 * 1.0 + 0.5 * 0.75) and best.saving == 1.0
    # one local model: the best routed accuracy (mid 0.875 > small 0.625)
    one = r[("local_single", "mid")]
    assert one.assignment == {"intent": "mid", "planner": "mid"} and one.label == "all local, one model (mid)"
    assert one.accuracy == pytest.approx(0.875) and one.saving == 1.0
    # matching the reference (margin 10 points): intent moves to small (4/4 like ref, free, smaller than mid);
    # planner stays: mid 3/4 = 75% and small 1/4 = 25% are more than 10 points below ref's 100%, although
    # McNemar does not find either worse (b = 0, c = 1: p = 1; b = 0, c = 3: p = 0.25)
    matched = r[("matched_reference", "ref")]
    assert matched.assignment == {"intent": "small", "planner": "ref"}
    assert matched.accuracy == 1.0 and matched.cost_usd == pytest.approx(0.40)
    assert matched.saving == pytest.approx(1 - (0.5 * 0 + 0.5 * 0.10) / (0.5 * 0.01 + 0.5 * 0.10))
    # a 30-point margin lets mid (75%) take the planner too; small (25%) still cannot
    wide = {x.policy: x for x in summarise(recs, meta, reference="ref", margin_pp=30).routing}["matched_reference"]
    assert wide.assignment == {"intent": "small", "planner": "mid"} and wide.saving == 1.0


def test_without_a_hosted_model_the_savings_base_is_the_reference() -> None:
    recs = (site_records("ref", "intent", [True] * 2, cost=0.02) + site_records("cheap", "intent", [True, False]))
    s = summarise(recs, {"cheap": {"params_b": 1}}, reference="ref")  # no pricing meta: both local
    r = routes(s)
    assert r[("all_on_reference", "ref")].base and r[("all_on_reference", "ref")].saving == 0.0
    assert ("all_hosted", "ref") not in r
    assert r[("local_best_per_site", None)].assignment == {"intent": "ref"}
    assert r[("local_single", "ref")].saving == 0.0
    # no reference and no hosted model: no savings at all
    assert all(x.saving is None and not x.base for x in summarise(recs).routing)


def test_routing_weights_are_configurable() -> None:
    recs = site_records("a", "intent", [True] * 2) + site_records("a", "codegen", [False] * 2)
    s = summarise(recs, weights={"intent": 3, "codegen": 1})
    assert s.weights == {"intent": 0.75, "codegen": 0.25}
    assert s.routing[-1].accuracy == pytest.approx(0.75)


def test_cost_per_call_and_saving_follow_the_call_mix() -> None:
    # intent: 2 cases at $0.01 per call on ref; codegen: 2 cases at $0.10; the agent calls intent 9x as often
    recs = (site_records("ref", "intent", [True] * 2, cost=0.01) + site_records("ref", "codegen", [True] * 2, cost=0.10)
            + site_records("free", "intent", [True] * 2) + site_records("free", "codegen", [False, True]))
    s = summarise(recs, {"ref": {"hosted": True}, "free": {"params_b": 1}}, reference="ref",
                  weights={"intent": 9, "codegen": 1})
    r = routes(s)
    assert r[("all_hosted", "ref")].cost_usd == pytest.approx(0.22)  # the sweep: every case once
    assert r[("all_hosted", "ref")].cost_per_call == pytest.approx(0.9 * 0.01 + 0.1 * 0.10)
    gen = r[("hosted_generation", "ref")]
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


# seed 001, Table 2: Gemma4 26B against Claude Haiku 4.5, discordant split (local only / hosted only) per site
TABLE2_HAIKU = {"intent": (4, 0, 0.125), "ha_action": (1, 0, 1.000), "actuator": (6, 4, 0.754),
                "planner": (5, 2, 0.453), "codegen": (1, 8, 0.039)}


def paired_records(a: str, b: str, site: str, only_a: int, only_b: int, both: int = 3, neither: int = 1) -> list[dict]:
    outcomes = [(True, True)] * both + [(True, False)] * only_a + [(False, True)] * only_b + [(False, False)] * neither
    return ([rec(a, site, f"{site}-{i:02d}", x) for i, (x, _) in enumerate(outcomes)]
            + [rec(b, site, f"{site}-{i:02d}", y) for i, (_, y) in enumerate(outcomes)])


def table2_records() -> list[dict]:
    return [r for site, (x, y, _) in TABLE2_HAIKU.items() for r in paired_records("gemma4-26b", "haiku", site, x, y)]


def test_mcnemar_raw_exact_p_reproduces_seed_001_table_2_and_is_the_default_verdict() -> None:
    s = summarise(table2_records(), reference="haiku")
    assert s.verdict == "raw"
    tests = {t.site: t for t in s.tests}
    for site, (x, y, paper_p) in TABLE2_HAIKU.items():
        t = tests[site]
        assert (t.only_model, t.only_reference) == (x, y)
        assert t.p_value == pytest.approx(binomtest(x, x + y, 0.5).pvalue)  # the exact test is the binomial one
        assert round(t.p_value, 3) == paper_p
    # the paper's headline: codegen separates the local model from the small hosted one at p = 0.039
    assert tests["codegen"].significant is True
    assert [t.site for t in s.tests if t.significant] == ["codegen"]
    # Holm over five sites: 5 x 0.039 = 0.195 (the issue's "not significant" reading)
    assert tests["codegen"].p_holm == pytest.approx(5 * binomtest(1, 9, 0.5).pvalue)
    assert round(tests["codegen"].p_holm, 3) == 0.195


def test_mcnemar_holm_verdict_is_a_named_choice() -> None:
    s = summarise(table2_records(), reference="haiku", verdict="holm")
    assert s.verdict == "holm" and not any(t.significant for t in s.tests)
    with pytest.raises(ValueError, match="verdict must be one of raw, holm"):
        summarise(table2_records(), reference="haiku", verdict="bonferroni")


def test_mcnemar_table_prints_both_p_values_and_names_the_verdict() -> None:
    from pytest_agentfloor.callsite.tables import mcnemar_table

    raw = mcnemar_table(summarise(table2_records(), reference="haiku"))
    assert raw.headers[5:8] == ["p (exact)", "p (Holm)", "differs"]
    codegen = next(row for row in raw.rows if row[1] == "codegen")
    assert codegen[5:8] == ["0.039", "0.195", "yes"]
    assert "(verdict: exact p)" in raw.title and "the exact p, unadjusted" in raw.notes[0]
    holm = mcnemar_table(summarise(table2_records(), reference="haiku", verdict="holm"))
    assert next(row for row in holm.rows if row[1] == "codegen")[7] == "no"
    assert "(verdict: Holm-adjusted p)" in holm.title
