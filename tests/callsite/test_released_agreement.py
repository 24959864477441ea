"""Our verdicts against the authors' on their released records (seed 001; issue 25's agreement target).

On every record whose gold is recoverable, the default (deployed) parser agrees with the authors'
harness on at least 98% of the label and actuator records, and every remaining difference is one listed
in docs/callsite.md ("Conformance"). The harness parser reproduces their harness: every planner and
codegen verdict is theirs, and the only differences left are two intent records whose stored verdict
their own data contradicts. The strict parser's lower agreement is the "before" figure.
"""

from __future__ import annotations

from collections import Counter

import pytest

from pytest_agentfloor.callsite.graders import grade_planner as GRADERS_PLANNER
from pytest_agentfloor.callsite.graders import GRADERS
from pytest_agentfloor.callsite.parsers import first_word

from .released import agreement, cases, load, verdicts

HAIKU = "anthropic:claude-haiku-4-5"
#: (case, model): why our verdict differs from the one stored in their records
DOCUMENTED: dict[tuple[str, str], str] = {
    # the same first word passes for the other models: these two records keep a verdict from the intent
    # keys before the revision their README describes ("Answer keys"); ours is the revised key's
    ("intent-crud-012", HAIKU): "stale verdict: PIPELINE passes for gemma4:26b on the same case",
    ("intent-query-020", HAIKU): "stale verdict: OTHER passes for gemma4:26b, gemma4:12b and gemma4:e2b",
}


def test_the_fixture_is_real_records_of_five_models_and_every_site_with_keys() -> None:
    recs, keys = load("slm_callsite_records.jsonl"), load("slm_callsite_keys.jsonl")
    assert len(recs) >= 300
    assert {r["model"] for r in recs} == {HAIKU, "anthropic:claude-sonnet-5", "openai:gemma4:26b",
                                          "openai:gemma4:12b", "openai:gemma4:e2b"}
    assert {k["category"] for k in keys} == {"intent", "ha", "actuator"}
    assert len({(r["model"], r["case_id"]) for r in recs}) == len(recs)
    released = [k for k in keys if k["source"].startswith("benchmark/")]
    assert len(released) == 46  # crosssite_keys.jsonl (32) and actuator_b_keys.jsonl (14), every one shipped
    assert all(k["source"].startswith(("benchmark/", "recovered: ")) for k in keys)


def test_recovered_label_keys_are_read_as_the_harness_reads_them() -> None:
    """A recovered label key is the first word of a passed record, and no passed record says otherwise."""
    keys = {k["case_id"]: k for k in load("slm_callsite_keys.jsonl") if k["category"] in ("intent", "ha")}
    for r in load("slm_callsite_records.jsonl"):
        k = keys.get(r["case_id"])
        if k is not None and r["passed"]:
            assert first_word(r["output"]).casefold() == k["expected"].casefold(), r["case_id"]


def test_deployed_parser_agrees_with_the_authors_on_every_site() -> None:
    agree = agreement("deployed")
    assert set(agree) == {"intent", "action_label", "actuator"}
    for site, (same, n) in agree.items():
        assert same / n >= 0.98, (site, same, n)
    differ = {(cid, model) for _, cid, model, theirs, ours in verdicts("deployed") if theirs != ours}
    assert differ == set(DOCUMENTED)


def test_harness_parser_differs_from_the_authors_only_where_their_data_contradicts_itself() -> None:
    """Label and actuator sites: the harness parser reads as the deployed one, so the same two stale records."""
    assert agreement("harness") == agreement("deployed")
    differ = {(cid, model) for _, cid, model, theirs, ours in verdicts("harness") if theirs != ours}
    assert differ == set(DOCUMENTED)


def test_strict_parser_is_the_before_figure() -> None:
    """The strict parser fails what the deployment accepts: every difference goes one way (issue 25)."""
    strict, deployed = agreement("strict"), agreement("deployed")
    share = {name: a["actuator"][0] / a["actuator"][1] for name, a in (("strict", strict), ("deployed", deployed))}
    assert share["strict"] < 0.85 and share["deployed"] >= 0.98
    assert strict["intent"][0] < deployed["intent"][0]
    one_way = Counter((theirs, ours) for _, cid, m, theirs, ours in verdicts("strict") if theirs != ours
                      and (cid, m) not in DOCUMENTED)
    assert set(one_way) == {(True, False)}


@pytest.mark.parametrize("parser", ["deployed", "strict"])
def test_a_site_accuracy_under_each_parser(parser: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Prints each model's accuracy per site: theirs, and ours under the parser (run with -s to read it)."""
    tot: Counter = Counter()
    theirs: Counter = Counter()
    ours: Counter = Counter()
    for site, _, model, t, o in verdicts(parser):
        tot[(model, site)] += 1
        theirs[(model, site)] += t
        ours[(model, site)] += o
    for k in sorted(tot):
        print(f"{parser:8} {k[0]:28} {k[1]:12} theirs {theirs[k]:3}/{tot[k]:<3} ours {ours[k]:3}/{tot[k]}")
    assert sum(tot.values()) == len(verdicts(parser))
    # Haiku's actuator replies wrap the array in a fence and explanation: the parsers part ways exactly there
    if parser == "deployed":
        assert ours[(HAIKU, "actuator")] == theirs[(HAIKU, "actuator")]
    else:
        assert ours[(HAIKU, "actuator")] < theirs[(HAIKU, "actuator")] * 0.5


def test_over_actuation_on_released_impossible_requests_reads_the_scored_parse() -> None:
    """An impossible request counts as acted on when the reply carries a call the deployment would run."""
    cs = cases("deployed")
    from pytest_agentfloor.callsite.graders import grade_actuator

    impossible = [r for r in load("slm_callsite_records.jsonl")
                  if r["category"] == "actuator" and r["case_id"] in cs and not cs[r["case_id"]].actions]
    assert len(impossible) >= 80
    for r in impossible:
        out = grade_actuator(cs[r["case_id"]], r["output"])
        assert out.details["acted"] is (not r["passed"]), (r["model"], r["case_id"])


def test_the_infeasible_planner_rule_follows_the_paper_not_the_harness() -> None:
    """Seed 001 scores an infeasible request on refusing (Table 7); their harness fails every [] and passed
    plans for a thermostat and a front-door lock the household does not have. Ours fails every such plan."""
    from pytest_agentfloor.callsite.graders import grade_planner
    from pytest_agentfloor.callsite.schema import CallSiteCase, PlannerGold

    recs = load("slm_callsite_planner_infeasible.jsonl")
    assert [r["passed"] for r in recs] == [False, True, True]
    keys = {k["case_id"]: k["expected"] for k in load("slm_callsite_planner_keys.jsonl")}
    for r in recs:
        gold = PlannerGold(refuse=True, allowed_types=keys[r["case_id"]]["types"],
                           must_not_contain=keys[r["case_id"]]["must_not_contain"])
        case = CallSiteCase(id=r["case_id"], site="planner", grader="planner", group="infeasible", system_prompt="",
                            prompt="", reference="[]", content_hash="released", plan=gold)
        out = grade_planner(case, r["output"])
        assert out.first_failed is not None and out.first_failed.code == "planner.refusal", r["case_id"]
        assert grade_planner(case, "[]").passed
        # the harness reading: their verdict, an empty plan failed
        harness = case.model_copy(update={"parser": "harness"})
        assert grade_planner(harness, r["output"]).passed is r["passed"], r["case_id"]
        assert not grade_planner(harness, "[]").passed


GEMMA26 = "openai:gemma4:26b"
QWEN4 = "openai:qwen3.5:4b"
#: (case, model): planner records on which our verdict differs from their harness's, and why. Each is deliberate
#: deviation 1 (docs/callsite.md): a plan for a device the home does not have, which their harness passes
#: because it only checks that the plan avoids the devices the home does have.
PLANNER_DEVIATIONS: dict[tuple[str, str], str] = {
    ("planner-infeasible-047", HAIKU): "a thermostat schedule for a home without a thermostat",
    ("planner-infeasible-048", HAIKU): "locks a front-door lock the home does not have",
    ("planner-infeasible-047", GEMMA26): "climate.living_room_thermostat: not in the registry",
    ("planner-infeasible-048", GEMMA26): "lock.front_door: not in the registry",
    ("planner-infeasible-049", HAIKU): "closes bedroom blinds the home does not have (a cover topic it invents)",
    ("planner-infeasible-050", HAIKU): "starts a dishwasher the home does not have (a command topic it invents)",
    ("planner-infeasible-046", QWEN4): "a kitchen light the home does not have: acts on the living-room status LED",
    ("planner-infeasible-047", QWEN4): "a thermostat schedule for a home without a thermostat",
    ("planner-infeasible-048", QWEN4): "a front-door lock schedule for a home without a lock",
    ("planner-infeasible-049", QWEN4): "a bedroom-blinds schedule for a home without blinds",
}


def test_the_planner_fixture_is_their_keys_and_real_records_of_seven_models() -> None:
    keys = load("slm_callsite_planner_keys.jsonl")
    assert len(keys) == 50 and all(k["source"] == "benchmark/planner_grounded.jsonl" for k in keys)
    groups = Counter(k["case_id"].split("-")[1] for k in keys)
    assert groups == {"entity": 8, "topic": 5, "reusetopic": 10, "reuseagent": 7, "schedule": 5, "chain": 4,
                      "create": 6, "infeasible": 5}
    recs = load("slm_callsite_planner_records.jsonl")
    assert {r["model"] for r in recs} == {HAIKU, GEMMA26, "anthropic:claude-sonnet-5", "openai:gemma4:12b",
                                          "openai:gemma4:e2b", "openai:qwen3.5:2b", QWEN4}
    assert len({(r["model"], r["case_id"]) for r in recs}) == len(recs) == 140
    assert {r["case_id"] for r in recs} <= {k["case_id"] for k in keys}
    assert Counter(r["passed"] for r in recs)[False] >= 30  # the sample holds their failures, not only passes


def test_deployed_parser_agrees_with_the_authors_on_the_planner() -> None:
    """Outside the infeasible rule (deviation 1) every verdict is theirs; the differences are exactly those listed."""
    from .released import planner_verdicts

    rows = planner_verdicts()
    differ = {(cid, m) for cid, m, theirs, ours in rows if theirs != ours}
    assert differ == set(PLANNER_DEVIATIONS)
    assert all(theirs and not ours for cid, m, theirs, ours in rows if (cid, m) in differ)
    outside = [(t, o) for cid, _, t, o in rows if "-infeasible-" not in cid]
    assert len(outside) >= 50 and all(t == o for t, o in outside)
    same = sum(t == o for _, _, t, o in rows)
    print(f"planner: {same}/{len(rows)} agree ({len(outside)} outside the infeasible sub-group, all agree)")


def test_harness_parser_agrees_with_the_authors_on_every_planner_record() -> None:
    """The harness reading grades the infeasible cases as their harness does: deviation 1 disappears."""
    from .released import planner_verdicts

    rows = planner_verdicts("harness")
    assert [(cid, m) for cid, m, theirs, ours in rows if theirs != ours] == []
    assert {(cid, m) for cid, m, _, ours in rows if ours} >= set(PLANNER_DEVIATIONS)


def test_released_planner_failures_fail_on_the_harness_rules() -> None:
    """What their harness fails we fail for the same kind of reason: an unparseable or truncated plan
    (`planner.format`), an empty plan (`planner.refusal`) or a missing/forbidden entity, topic or agent
    (`planner.requirements`)."""
    from .released import planner_cases

    cs = planner_cases()
    codes = Counter()
    for r in load("slm_callsite_planner_records.jsonl"):
        if not r["passed"] and "-infeasible-" not in r["case_id"]:
            out = GRADERS_PLANNER(cs[r["case_id"]], r["output"])
            codes[out.first_failed.code] += 1
    # planner.refusal: [] for a feasible request (Qwen3.5 4B twice), which their harness fails as an empty plan
    assert set(codes) == {"planner.format", "planner.requirements", "planner.refusal"}, codes
    # the truncated E2B plan (800-token cap hit inside a code string) is unreadable, not a wrong plan
    e2b = next(r for r in load("slm_callsite_planner_records.jsonl")
               if r["model"] == "openai:gemma4:e2b" and r["case_id"] == "planner-reusetopic-022")
    assert GRADERS_PLANNER(cs[e2b["case_id"]], e2b["output"]).first_failed.code == "planner.format"


def test_either_id_of_the_double_registered_tv_resolves_the_planner_key() -> None:
    """Their planner keys accept both registrations of one TV (a nested list); so do ours, and only those two."""
    from .released import planner_cases

    case = planner_cases()["planner-entity-004"]
    plan = ('[{"name": "tv-off", "type": "scheduled", "description": "23:00", "schedule": {"type": "daily", '
            '"at": "23:00"}, "publish_topic": "schedule/tv-off/fired"}, {"name": "off", "type": "ha_actuator", '
            '"description": "TV off", "mqtt_topics": ["schedule/tv-off/fired"], "actions": [{"domain": '
            '"media_player", "service": "turn_off", "entity_id": "%s"}]}]')
    for tv in ("media_player.samsung_7_series_55_ue55nu7023", "media_player.tv_samsung_7_series_55"):
        assert GRADERS_PLANNER(case, plan % tv).passed, tv
    out = GRADERS_PLANNER(case, plan % "remote.samsung_7_series_55_ue55nu7023")
    assert not out.passed and out.first_failed.code == "planner.requirements"


#: (case, model): codegen records on which our verdict differs from their harness's. Each is deliberate
#: deviation 2 (docs/callsite.md): the code breaks the running agent in a way their harness does not check.
CODEGEN_DEVIATIONS: dict[tuple[str, str], str] = {
    ("dynamic-llm-042", "openai:gemma4:12b"): "subscribes handle_task(agent, payload): the framework calls a "
                                              "subscription callback with the payload alone (TypeError)",
    ("dynamic-schema-046", HAIKU): "ends with a second, synchronous def setup(agent): the module keeps that one "
                                   "and DynamicAgent awaits setup(agent) (TypeError: None is not awaitable)",
    ("dynamic-subscribe-007", "openai:qwen3.5:4b"): "the task is to log the running total, and every agent.log(...) "
                                                    "is left unawaited: the coroutine is dropped, nothing is logged",
}


def test_the_codegen_fixture_is_their_keys_and_real_records_of_five_models() -> None:
    keys = load("slm_callsite_codegen_keys.jsonl")
    assert len(keys) == 50 and all(k["source"] == "waldiez/wactorz eval/dynamic_strict.jsonl" for k in keys)
    assert Counter(k["case_id"].split("-")[1] for k in keys) == {
        "subscribe": 7, "publish": 5, "task": 6, "state": 5, "window": 4, "oneshot": 3, "cleanup": 3, "contract": 3,
        "blocking": 4, "llm": 3, "schema": 4, "poll": 3}
    recs = load("slm_callsite_codegen_records.jsonl")
    assert {r["model"] for r in recs} == {HAIKU, GEMMA26, "anthropic:claude-sonnet-5", "openai:gemma4:12b", QWEN4}
    assert len({(r["model"], r["case_id"]) for r in recs}) == len(recs) == 73
    assert {r["case_id"] for r in recs} <= {k["case_id"] for k in keys}


def test_deployed_parser_agrees_with_the_authors_on_codegen() -> None:
    """Every verdict is theirs except the listed run-time-contract failures (deviation 2)."""
    from .released import codegen_verdicts

    rows = codegen_verdicts("deployed")
    differ = {(cid, m) for cid, m, theirs, ours in rows if theirs != ours}
    assert differ == set(CODEGEN_DEVIATIONS)
    assert all(theirs and not ours for cid, m, theirs, ours in rows if (cid, m) in differ)
    rest = [(t, o) for cid, m, t, o in rows if (cid, m) not in differ]
    assert all(t == o for t, o in rest) and len(rest) >= 25
    print(f"codegen: {len(rows) - len(differ)}/{len(rows)} agree")


def test_harness_parser_agrees_with_the_authors_on_every_codegen_record() -> None:
    """Only their structural findings: deviation 2 disappears, and nothing else changes."""
    from .released import codegen_verdicts

    rows = codegen_verdicts("harness")
    assert [(cid, m) for cid, m, theirs, ours in rows if theirs != ours] == []
    assert sum(not theirs for _, _, theirs, _ in rows) >= 4  # it agrees on failures too, not only on passes


def test_strict_codegen_parser_is_the_before_figure() -> None:
    """The strict parser fails working agents that import the standard library at module level (issue 25, 7)."""
    from .released import codegen_cases, codegen_verdicts

    rows = codegen_verdicts("strict")
    one_way = {(t, o) for cid, m, t, o in rows if t != o and (cid, m) not in CODEGEN_DEVIATIONS}
    assert one_way == {(True, False)}
    assert all(theirs and not ours for cid, m, theirs, ours in rows if (cid, m) in CODEGEN_DEVIATIONS)
    assert sum(t == o for _, _, t, o in rows) < sum(t == o for _, _, t, o in codegen_verdicts("deployed"))
    cs = codegen_cases("strict")
    stdlib_first = [r for r in load("slm_callsite_codegen_records.jsonl")
                    if r["passed"] and r["output"].startswith("import asyncio")]
    assert len(stdlib_first) >= 3
    for r in stdlib_first:
        out = GRADERS["codegen"](cs[r["case_id"]], r["output"])
        assert out.first_failed is not None and out.first_failed.code == "codegen.module_import", r["case_id"]


def test_a_redefined_entry_point_is_read_as_python_runs_it() -> None:
    """Two released Gemma4 26B replies define setup() twice; the module body keeps the last one, which
    subscribes with a one-argument callback: both graders pass them."""
    from .released import codegen_cases

    cs = codegen_cases("deployed")
    for r in load("slm_callsite_codegen_records.jsonl"):
        if r["model"] == GEMMA26 and r["case_id"] in ("dynamic-schema-045", "dynamic-schema-046"):
            assert r["output"].count("async def setup(agent)") == 2
            assert r["passed"] and GRADERS["codegen"](cs[r["case_id"]], r["output"]).passed
    # Claude Haiku 4.5's schema-046 redefines it as a plain def: the agent the module keeps cannot start
    haiku = next(r for r in load("slm_callsite_codegen_records.jsonl")
                 if r["model"] == HAIKU and r["case_id"] == "dynamic-schema-046")
    out = GRADERS["codegen"](cs[haiku["case_id"]], haiku["output"])
    assert out.first_failed is not None and out.first_failed.observed == "def setup (not async)"
