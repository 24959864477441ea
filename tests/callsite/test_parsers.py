"""The deployed output parser against the strict one: issue 25's eight reproduced differences.

Each test takes a reply the deployed system acts on correctly (most are real outputs of the
authors' released records) and shows the deployed parser passes it where the strict one did not,
plus the replies both must still fail.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentfloor.callsite.graders import grade_actuator, grade_codegen, grade_label, grade_planner
from pytest_agentfloor.callsite.kind import expand_table, facets, grade_call
from pytest_agentfloor.callsite.parsers import drop_fence_lines, find_json, first_word, read_json_array
from pytest_agentfloor.callsite.schema import Installation
from pytest_agentfloor.suite.loader import CaseError
from pytest_agentfloor.trajectory import Trajectory, Turn

from .helpers import case, js


def rule(outcome) -> str | None:
    return None if outcome.first_failed is None else outcome.first_failed.code


def both(grader, c, output: str) -> tuple[str | None, str | None]:
    """(rule under the deployed parser, rule under the strict one)."""
    return (rule(grader(c.model_copy(update={"parser": "deployed"}), output)),
            rule(grader(c.model_copy(update={"parser": "strict"}), output)))


def test_a_case_without_a_parser_reads_replies_as_deployed() -> None:
    c = case("intent", labels=("actuate", "other"), label="other", parser=None)
    assert c.parser_name == "deployed"
    assert grade_label(c, "OTHER\n\nThis request mixes").passed


# 1 -- labels: the router reads the first word ------------------------------------------------
INTENT = case("intent", labels=("actuate", "pipeline", "home_assistant", "other"), label="other")


@pytest.mark.parametrize("output", ["OTHER\n\nThis request mixes immediate device control (",
                                    "Other: chit-chat", "other because nothing in the home is involved"])
def test_1_first_word_label_passes_deployed_not_strict(output: str) -> None:
    assert both(grade_label, INTENT, output) == (None, "intent.valid_label")


@pytest.mark.parametrize("output", ["other", "OTHER.", "'other'", ' "Other" '])
def test_1_a_bare_label_passes_both(output: str) -> None:
    assert both(grade_label, INTENT, output) == (None, None)


@pytest.mark.parametrize("output, deployed", [("PIPELINE\n\nThis is a reactive rule", "intent.label"),
                                              ("The label is other", "intent.valid_label"),
                                              ("", "intent.valid_label"), ("**other**", "intent.valid_label")])
def test_1_first_word_label_still_fails_a_wrong_or_decorated_first_word(output: str, deployed: str) -> None:
    assert both(grade_label, INTENT, output)[0] == deployed


def test_first_word_strips_what_the_deployed_router_strips() -> None:
    assert [first_word(t) for t in ("  ACTUATE.\n", '"HA"', "other, because", "", "`other`")] == \
        ["ACTUATE", "HA", "other", "", "`other`"]


# 2 -- the JSON array found in a fence or in prose ------------------------------------------
REFUSE = case("actuator", actions=[])
ON = {"domain": "light", "service": "turn_on", "entity_id": "light.kitchen"}


@pytest.mark.parametrize("output", [
    "```json\n[]\n```\n\nThe user requested to \"lock the office door,\" but there is no lock entity.",
    "No kitchen light entity is available in the provided device list.\n\n```json\n[]\n```",
    "There is no \"kitchen\" light entity in the payload. I won't substitute a different device.\n\n[]",
])
def test_2_a_refusal_in_prose_passes_deployed_not_strict(output: str) -> None:
    assert both(grade_actuator, REFUSE, output) == (None, "actuator.format")


def test_2_json_search_order_and_misses() -> None:
    assert find_json('[{"a": 1}]') == [{"a": 1}]
    assert find_json("Here you go:\n```json\n[1, 2]\n```\nDone.") == [1, 2]
    assert find_json("prefix [1, [2]] suffix") == [1, [2]]
    assert find_json('{"domain": "light"}') == {"domain": "light"}
    assert find_json("no json here") is None and find_json("") is None
    assert read_json_array('{"domain": "light"}', "deployed")[0] is None  # an object is not an action list
    assert read_json_array("[1] and [2]", "deployed")[0] is None  # two arrays: the span between does not parse


# 3 -- service_data compared on the gold's keys ---------------------------------------------
def test_3_service_data_absent_from_gold_is_unconstrained_deployed_exact_strict() -> None:
    c = case("actuator", actions=[ON])
    dimmed = js([{**ON, "service_data": {"brightness_pct": 30}}])
    assert both(grade_actuator, c, dimmed) == (None, "actuator.service_call")
    assert both(grade_actuator, c, js([{**ON, "service_data": {}}])) == (None, None)


def test_3_gold_keys_are_checked_and_extra_keys_allowed() -> None:
    c = case("actuator", actions=[{**ON, "service_data": {"brightness_pct": 30}}])
    assert both(grade_actuator, c, js([{**ON, "service_data": {"brightness_pct": 30.0, "transition": 2}}])) == \
        (None, "actuator.service_call")
    assert both(grade_actuator, c, js([{**ON, "service_data": {"brightness_pct": 80}}])) == \
        ("actuator.service_call", "actuator.service_call")
    assert both(grade_actuator, c, js([ON]))[0] == "actuator.service_call"


def test_3_service_data_exact_compares_the_whole_object_under_both_parsers() -> None:
    c = case("actuator", actions=[{**ON, "service_data": {}, "service_data_exact": True}])
    assert both(grade_actuator, c, js([{**ON, "service_data": {"brightness_pct": 30}}])) == \
        ("actuator.service_call", "actuator.service_call")
    assert both(grade_actuator, c, js([ON])) == (None, None)


def test_3_extra_keys_inside_a_call_are_tolerated_deployed_only() -> None:
    c = case("actuator", actions=[ON])
    assert both(grade_actuator, c, js([{**ON, "comment": "kitchen"}])) == (None, "actuator.format")


# 4 -- one device, two ids -----------------------------------------------------------------
TV = Installation.model_validate({"id": "site_tv", "name": "tv", "entities": [
    {"id": "media_player.samsung_7_series_55_ue55nu7023", "name": "Samsung 7 Series (55)"},
    {"id": "media_player.tv_samsung_7_series_55", "name": "[TV] Samsung 7 Series (55)"},
    {"id": "light.hall", "name": "Hall"}]})
TV_OFF = {"domain": "media_player", "service": "turn_off",
          "entity_id_any": ["media_player.samsung_7_series_55_ue55nu7023", "media_player.tv_samsung_7_series_55"]}


@pytest.mark.parametrize("parser", ["deployed", "strict"])
def test_4_either_id_of_one_device_passes(parser: str) -> None:
    c = case("actuator", actions=[TV_OFF], installation=TV, parser=parser)
    for eid in TV_OFF["entity_id_any"]:
        assert grade_actuator(c, js([{"domain": "media_player", "service": "turn_off", "entity_id": eid}])).passed
    both_ids = [{"domain": "media_player", "service": "turn_off", "entity_id": e} for e in TV_OFF["entity_id_any"]]
    assert rule(grade_actuator(c, js(both_ids))) == "actuator.extra_action"  # one device switched twice
    hall = grade_actuator(c, js([{"domain": "light", "service": "turn_off", "entity_id": "light.hall"}]))
    assert rule(hall) == "actuator.substitution" and hall.details["substitution"]


def test_4_entity_id_any_and_entity_id_are_exclusive() -> None:
    with pytest.raises(ValueError, match="exactly one of entity_id and entity_id_any"):
        case("actuator", actions=[{**TV_OFF, "entity_id": "light.hall"}])
    with pytest.raises(ValueError, match="at least one"):
        case("actuator", actions=[{**TV_OFF, "entity_id_any": []}])


# 5 -- real registry ids -------------------------------------------------------------------
REAL_IDS = ["update.home_assistant_connect_zbt_2_0000005E0053_firmware", "sensor.22101316g_battery_level",
            "light.wiz_rgbw_tunable_351b6e", "sensor.shelly.plug_s_power", "binary_sensor.Front-Door"]


def test_5_real_registry_ids_load_in_installations_and_gold(tmp_path: Path) -> None:
    inst = Installation.model_validate({"id": "real", "name": "real", "entities": [
        {"id": e, "name": e} for e in REAL_IDS]})
    assert inst.entity_ids() == frozenset(REAL_IDS)
    c = case("actuator", installation=inst, actions=[{"domain": "update", "service": "install",
                                                      "entity_id": REAL_IDS[0]}])
    assert grade_actuator(c, js([{"domain": "update", "service": "install", "entity_id": REAL_IDS[0]}])).passed
    for bad in ("no_dot", "light.has space", ".starts_with_dot", "light."):
        with pytest.raises(ValueError, match="domain.object_id"):
            Installation.model_validate({"id": "x", "name": "x", "entities": [{"id": bad, "name": "n"}]})


# 6 -- planner: the harness's contract, must-not-contain and delegation ---------------------------
HA_STEP = {"name": "Hall Light", "type": "ha_actuator", "description": "hall light on motion",
           "mqtt_topics": ["custom/hall/motion"],
           "actions": [{"domain": "light", "service": "turn_on", "entity_id": "light.hall"}]}


def test_6_deployed_planner_drops_the_strict_structural_rules() -> None:
    c = case("planner", plan={"entities": ["light.hall"]})
    # a name not in kebab case, a topic nobody publishes, no cooldown: the deployment spawns it anyway
    assert both(grade_planner, c, js([HA_STEP])) == (None, "planner.type")
    assert both(grade_planner, c, js([{**HA_STEP, "name": "hall-light"}])) == (None, "planner.topic")
    no_desc = {k: v for k, v in HA_STEP.items() if k != "description"}
    assert both(grade_planner, c, js([no_desc]))[0] == "planner.type"
    assert both(grade_planner, c, js([{**HA_STEP, "type": "webhook"}]))[0] == "planner.type"


def test_6_must_contain_alternatives_and_must_not_contain() -> None:
    c = case("planner", plan={"must_contain": [["light.hall", "light.kitchen"], "custom/hall/motion"],
                              "must_not_contain": ["switch.kettle"], "allowed_types": ["ha_actuator"]},
             parser="deployed")
    assert grade_planner(c, js([HA_STEP])).passed
    kitchen = {**HA_STEP, "actions": [{"domain": "light", "service": "turn_on", "entity_id": "LIGHT.KITCHEN"}]}
    assert grade_planner(c, js([kitchen])).passed  # case-insensitive, like the harness
    kettle = {**HA_STEP, "actions": HA_STEP["actions"] + [{"domain": "switch", "service": "turn_on",
                                                           "entity_id": "switch.kettle"}]}
    out = grade_planner(c, js([kettle]))
    assert rule(out) == "planner.requirements" and "switch.kettle, which it must not" in out.first_failed.observed
    sched = {"name": "s", "type": "scheduled", "description": "d", "schedule": {"type": "daily", "at": "07:00"},
             "publish_topic": "schedule/s/fired"}
    assert rule(grade_planner(c, js([HA_STEP, sched]))) == "planner.type"  # not an allowed type here


def test_6_delegates_to_a_running_agent() -> None:
    c = case("planner", plan={"delegates": ["weather"]}, parser="deployed")
    step = {"name": "wind-warning", "type": "dynamic", "description": "measure the wind itself",
            "poll_interval": 60, "code": "async def process(agent):\n    await agent.publish('alerts/wind', {})"}
    out = grade_planner(c, js([step]))
    assert rule(out) == "planner.requirements" and "delegate to the running agent weather" in out.first_failed.observed
    assert grade_planner(c, js([{**step, "description": "hand the job to weather"}])).passed


def test_6_delegates_must_name_a_running_agent(tmp_path: Path) -> None:
    (tmp_path / "installations").mkdir()
    (tmp_path / "installations" / "site_t.toml").write_text(
        'kind = "installation"\nid = "site_t"\nname = "t"\nentities = [{ id = "light.hall", name = "Hall" }]\n'
        'agents = [{ name = "weather", publishes = ["weather/now"] }]\n')
    table = {"kind": "callsite", "site": "planner", "grader": "planner", "system_prompt": "s",
             "installation": "site_t", "case": [{"group": "g", "prompt": "p", "reference": "[]",
                                                 "plan": {"delegates": ["wether"]}}]}
    data = {k: v for k, v in table.items() if k != "kind"}
    with pytest.raises(CaseError, match=r"plan.delegates names \['wether'\], not agents running at site_t"):
        expand_table(data, tmp_path / "planner.toml", "h")
    data["case"][0]["plan"]["delegates"] = ["weather"]
    assert expand_table(data, tmp_path / "planner.toml", "h")[0].plan.delegates == ["weather"]


def test_6_infeasible_request_still_requires_the_refusal_under_both_parsers() -> None:
    """Seed 001: an infeasible planner request is scored on refusing; the authors' harness fails [] instead."""
    c = case("planner", plan={"refuse": True})
    assert both(grade_planner, c, "[]") == (None, None)
    assert both(grade_planner, c, "```json\n[]\n```\nThe home has no such device.") == (None, "planner.format")
    assert both(grade_planner, c, js([HA_STEP])) == ("planner.refusal", "planner.refusal")


# 7 -- codegen: standard-library imports, truncated fences, stubs -----------------------------
SUB = case("codegen", code={"functions": ["setup"], "uses": ["agent.subscribe"]})
BODY = ("async def setup(agent):\n    async def on_msg(payload):\n        await agent.log(str(payload))\n"
        "    agent.subscribe('custom/demo/events', on_msg)\n")


@pytest.mark.parametrize("imports", ["import asyncio\n", "import json, time\nfrom datetime import datetime\n",
                                     "import os.path\n"])
def test_7_standard_library_imports_at_module_level_pass_deployed(imports: str) -> None:
    assert both(grade_codegen, SUB, imports + BODY) == (None, "codegen.module_import")


@pytest.mark.parametrize("imports", ["import requests\n", "from bs4 import BeautifulSoup\n", "import asyncio, cv2\n",
                                     "from . import helpers\n"])
def test_7_third_party_imports_at_module_level_fail_both(imports: str) -> None:
    deployed, strict = both(grade_codegen, SUB, imports + BODY)
    assert deployed == strict == "codegen.module_import"


def test_7_a_truncated_reply_with_an_unclosed_fence_parses_deployed() -> None:
    truncated = "```python\n" + BODY
    assert both(grade_codegen, SUB, truncated) == (None, "codegen.parse")
    assert drop_fence_lines(truncated) == BODY.strip()


def test_7_stub_bodies_of_required_functions_fail_deployed() -> None:
    c = case("codegen", code={"functions": ["handle_task"]})
    stub = 'async def handle_task(agent, payload):\n    """Handle it."""\n    pass\n'
    assert both(grade_codegen, c, stub) == ("codegen.stub", None)
    assert both(grade_codegen, c, "async def handle_task(agent, payload):\n    ...\n")[0] == "codegen.stub"
    # stubs of functions the task does not require are idiomatic
    extra = "async def setup(agent):\n    pass\n\nasync def handle_task(agent, payload):\n    return payload\n"
    assert both(grade_codegen, c, extra) == (None, None)
    allowed = case("codegen", code={"functions": ["handle_task"], "allow_empty_bodies": True})
    assert both(grade_codegen, allowed, stub) == (None, None)


def test_7_codegen_must_contain_and_must_not_contain() -> None:
    c = case("codegen", code={"functions": ["setup"], "must_contain": ["custom/demo/EVENTS"],
                              "must_not_contain": ["requests.get"]})
    assert grade_codegen(c, BODY).passed
    out = grade_codegen(c, BODY + "\nasync def process(agent):\n    import requests\n    requests.get('x')\n")
    assert rule(out) == "codegen.uses" and "requests.get" in out.first_failed.observed


# 8 -- over-actuation reads the same parse as the score ---------------------------------------
def _graded(c, output: str) -> dict:
    traj = Trajectory(case_id=c.id, tier="callsite", variant="v0", instance="i0", run=0, model="m", tools=[],
                      messages=[], turn_budget=1, call_limit=0)
    traj.turns.append(Turn(index=0, content=output, finish_reason="stop"))
    traj.final_answer, traj.termination = output, "final_answer"
    g = grade_call(c, traj)
    return {"passed": g.passed, **g.facets}


def test_8_a_call_wrapped_in_prose_on_an_impossible_request_counts_as_acting() -> None:
    prose = "Sure! Turning it on:\n```json\n" + js([ON]) + "\n```\nLet me know if you need anything else."
    deployed = _graded(REFUSE.model_copy(update={"parser": "deployed"}), prose)
    strict = _graded(REFUSE.model_copy(update={"parser": "strict"}), prose)
    assert deployed["acted"] is True and deployed["rule"] == "actuator.refusal" and not deployed["passed"]
    assert deployed["substitution"] is True  # a real device of the site, acted on in place of the absent one
    assert strict["acted"] is False and strict["rule"] == "actuator.format"  # the strict parser read no call
    refused = _graded(REFUSE.model_copy(update={"parser": "deployed"}), "```json\n[]\n```\nThere is no such device.")
    assert refused["passed"] and refused["refused"] and not refused["acted"]


def test_8_facets_carry_the_parse_of_the_score() -> None:
    c = case("actuator", actions=[ON], parser="deployed")
    out = grade_actuator(c, "I will do that now: " + js([ON]))
    f = facets(c, out)
    assert f["acted"] is True and f["refused"] is False and f["rule"] is None


# the option and the table field ---------------------------------------------------------------
def test_the_table_field_sets_the_parser_and_bad_values_are_named(tmp_path: Path) -> None:
    table = {"site": "router", "grader": "intent", "system_prompt": "s", "labels": ["a", "b"], "parser": "strict",
             "case": [{"group": "g", "prompt": "p", "label": "a"}]}
    assert expand_table(table, tmp_path / "router.toml", "h")[0].parser == "strict"
    with pytest.raises(CaseError, match="parser"):
        expand_table({**table, "parser": "lenient"}, tmp_path / "router.toml", "h")
    json.dumps(table)  # the table stays plain data
