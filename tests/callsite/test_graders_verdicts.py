"""The call-site graders' verdicts in full: every rule's code, expected and observed text, and
the details the statistics read. A failed item shows these texts; each is written out by hand."""

from __future__ import annotations

import json

import pytest

from pytest_agentfloor.callsite.graders import grade_label, grade_planner

from .helpers import case, js
from .test_graders import PLAN, ha_step, sched_step

RULES = ["planner.format", "planner.refusal", "planner.type", "planner.fields", "planner.entity",
         "planner.schedule", "planner.topic", "planner.requirements"]


def verdicts(out) -> list[tuple]:
    return [(v.code, v.ok, v.expected, v.observed) for v in out.verdicts]


def failing(out, n: int, expected: str, observed: str) -> None:
    """The first `n` rules passed, the next failed with these texts, nothing checked after it
    (a step's fields are checked in the same pass as its type: a fields failure skips planner.type)."""
    passed = [c for c in RULES[:n] if not (n == 3 and c == "planner.type")]
    assert verdicts(out) == [(c, True, "", "") for c in passed] + [(RULES[n], False, expected, observed)]


def cut160(text: str) -> str:
    return text if len(text) <= 160 else text[:157] + "..."


def test_a_valid_plan_passes_every_rule_in_order() -> None:
    out = grade_planner(PLAN, js([ha_step()]))
    assert verdicts(out) == [(c, True, "", "") for c in RULES]
    assert out.details == {"refused": False, "actionable": True}


@pytest.mark.parametrize("output,expected,observed", [
    ("plan: x", "a JSON array of pipeline steps", "not JSON (Expecting value at char 0): plan: x"),
    ("", "a JSON array of pipeline steps", "not JSON (Expecting value at char 0): (empty)"),
    ("[1, " + "2 " * 60, "a JSON array of pipeline steps",
     "not JSON (Expecting ',' delimiter at char 6): [1, " + "2 " * 36 + "2..."),  # the text cut at 80
    (js({"steps": []}), "a JSON array of pipeline steps", "a JSON dict, not an array"),
    (js(["step", {}]), "a JSON array of objects", '["step", {}]'),
])
def test_format(output: str, expected: str, observed: str) -> None:
    out = grade_planner(PLAN, output)
    failing(out, 0, expected, observed)
    assert out.details == {"refused": False, "actionable": True}


def test_refusal_both_ways() -> None:
    infeasible = case("planner", plan={"refuse": True})
    out = grade_planner(infeasible, "```json\n[]\n```")
    assert verdicts(out) == [("planner.format", True, "", ""), ("planner.refusal", True, "", "")]
    assert out.details == {"refused": True, "actionable": False}
    out = grade_planner(infeasible, js([ha_step(), ha_step()]))
    failing(out, 1, "[] (the site cannot support this pipeline)", "2 step(s)")
    assert out.details == {"refused": False, "actionable": False}
    out = grade_planner(PLAN, "[]")
    failing(out, 1, "a plan (the request is feasible)", "[]")
    assert out.details == {"refused": True, "actionable": True}


TYPES = "type in ha_actuator, scheduled, dynamic"


@pytest.mark.parametrize("step,n,expected,observed", [
    (ha_step(type="webhook"), 2, TYPES, "'webhook'"),
    ({"name": "x"}, 2, TYPES, "None"),
    (ha_step(name="Hall Light"), 2, "a kebab-case name", "'Hall Light'"),
    (ha_step(name="hall-"), 2, "a kebab-case name", "'hall-'"),
    (ha_step(name=7), 2, "a kebab-case name", "7"),
    (ha_step(mqtt_topics=[]), 3, "ha_actuator needs a non-empty mqtt_topics list", None),
    (ha_step(mqtt_topics=[7]), 3, "ha_actuator needs a non-empty mqtt_topics list", None),
    (ha_step(mqtt_topics="a/b"), 3, "ha_actuator needs a non-empty mqtt_topics list", None),
    (ha_step(actions=[]), 3, "ha_actuator needs a non-empty actions list", None),
    (ha_step(actions=["turn_on"]), 3, "ha_actuator needs a non-empty actions list", None),
    (ha_step(actions={"entity_id": "light.hall"}), 3, "ha_actuator needs a non-empty actions list", None),
    ({"name": "tick", "type": "scheduled", "schedule": {"type": "interval", "seconds": 5}}, 3,
     "scheduled needs a publish_topic", None),
    ({"name": "tick", "type": "scheduled", "publish_topic": "", "schedule": {}}, 3, "scheduled needs a publish_topic",
     None),
    ({"name": "calc", "type": "dynamic", "code": None, "poll_interval": 5}, 3, "dynamic needs its code as a string",
     None),
    ({"name": "calc", "type": "dynamic", "code": "x", "poll_interval": True}, 3,
     "dynamic needs a numeric poll_interval", None),
    ({"name": "calc", "type": "dynamic", "code": "x", "poll_interval": "5"}, 3,
     "dynamic needs a numeric poll_interval", None),
    ({"name": "calc", "type": "dynamic", "code": "x"}, 3, "dynamic needs a numeric poll_interval", None),
])
def test_step_type_name_and_fields(step: dict, n: int, expected: str, observed: str | None) -> None:
    out = grade_planner(PLAN, js([ha_step(), step]))
    # fields: the step itself, keys sorted, on one line
    failing(out, n, expected, observed if observed is not None else cut160(json.dumps(step, sort_keys=True)))


def test_well_formed_steps_of_every_type_pass_the_field_rules() -> None:
    steps = [ha_step(topic="schedule/tick/fired"), sched_step({"type": "interval", "seconds": 2.5}, name="tick"),
             {"name": "calc", "type": "dynamic", "code": "", "poll_interval": 0.5}]
    out = grade_planner(PLAN, js(steps))
    assert out.passed, verdicts(out)


def test_entity_ids_must_be_the_sites() -> None:
    reg = "entity ids from site_t's registry"
    out = grade_planner(PLAN, js([ha_step(entity="the hall light")]))
    failing(out, 4, reg, "'the hall light' is a description, not an entity id")
    assert out.details == {"refused": False, "actionable": True, "described": True}
    out = grade_planner(PLAN, js([ha_step(), ha_step(entity="light.hallway"), ha_step(entity="x")]))
    failing(out, 4, reg, "'light.hallway' is not in the registry")
    assert out.details["described"] is False
    failing(grade_planner(PLAN, js([ha_step(entity="Light.Hall")])), 4, reg,
            "'Light.Hall' is a description, not an entity id")
    failing(grade_planner(PLAN, js([ha_step(entity=None)])), 4, reg, "None is a description, not an entity id")


@pytest.mark.parametrize("schedule,problem", [
    ({"type": "daily", "at": "7am"}, "'at' must be HH:MM, got '7am'"),
    ({"type": "daily", "at": "24:00"}, "'at' must be HH:MM, got '24:00'"),
    ({"type": "daily", "at": "19:60"}, "'at' must be HH:MM, got '19:60'"),
    ({"type": "daily", "at": "9:00"}, "'at' must be HH:MM, got '9:00'"),
    ({"type": "daily"}, "'at' must be HH:MM, got None"),
    ({"type": "weekly", "at": "07:00", "days": []},
     "'days' must be a non-empty list of mon, tue, wed, thu, fri, sat, sun, got []"),
    ({"type": "weekly", "at": "07:00", "days": ["mon", "monday"]},
     "'days' must be a non-empty list of mon, tue, wed, thu, fri, sat, sun, got ['mon', 'monday']"),
    ({"type": "weekly", "at": "07:00", "days": "mon"},
     "'days' must be a non-empty list of mon, tue, wed, thu, fri, sat, sun, got 'mon'"),
    ({"type": "interval", "seconds": 0}, "'seconds' must be a positive number, got 0"),
    ({"type": "interval", "seconds": -1.5}, "'seconds' must be a positive number, got -1.5"),
    ({"type": "interval", "seconds": True}, "'seconds' must be a positive number, got True"),
    ({"type": "interval", "seconds": "60"}, "'seconds' must be a positive number, got '60'"),
    ({"type": "cron", "expr": "* * * * *"}, "schedule type must be daily, weekly or interval, got 'cron'"),
    ({}, "schedule type must be daily, weekly or interval, got None"),
    ("daily at 7", "schedule is not an object"),
])
def test_schedules(schedule, problem: str) -> None:
    plan = [sched_step({"type": "daily", "at": "06:00"}, name="first"), sched_step(schedule),
            ha_step(topic="schedule/every-morning/fired")]
    failing(grade_planner(PLAN, js(plan)), 5, "a well-formed schedule", f"every-morning: {problem}")


@pytest.mark.parametrize("schedule", [{"type": "daily", "at": "00:00"}, {"type": "daily", "at": "23:59"},
                                      {"type": "weekly", "at": "19:05", "days": ["sat", "sun"]},
                                      {"type": "interval", "seconds": 1}])
def test_good_schedules(schedule: dict) -> None:
    assert grade_planner(PLAN, js([sched_step(schedule), ha_step(topic="schedule/every-morning/fired")])).passed


def test_topics_must_be_published() -> None:
    expected = ("topics some agent publishes (an existing agent, a step of this plan or "
                "homeassistant/state_changes/#)")
    out = grade_planner(PLAN, js([ha_step(topic="weather/now"), ha_step(mqtt_topics=["a/b", "weather/now", "c/d"])]))
    failing(out, 6, expected, "nobody publishes 'a/b'")
    # a dynamic step's subscriptions count too
    dyn = {"name": "calc", "type": "dynamic", "code": "", "poll_interval": 5, "mqtt_topics": ["x/y"]}
    failing(grade_planner(PLAN, js([ha_step(), dyn])), 6, expected, "nobody publishes 'x/y'")


def test_requirements_list_every_problem() -> None:
    strict = case("planner", plan={"entities": ["light.kitchen", "light.hall"], "topics": ["weather/now"],
                                   "types": ["scheduled", "ha_actuator"], "forbid_types": ["ha_actuator", "dynamic"],
                                   "schedule": {"type": "daily", "at": "06:00"}, "max_steps": 1})
    out = grade_planner(strict, js([ha_step(), ha_step(name="again")]))
    failing(out, 7, "the plan the request asks for",
            "does not use light.kitchen; does not reuse topic weather/now; has no scheduled step; "
            "adds a ha_actuator step where an existing agent already does the job; "
            'no schedule carrying {"at": "06:00", "type": "daily"}; 2 steps (at most 1)')


def test_requirements_met() -> None:
    gold = case("planner", plan={"entities": ["light.kitchen"], "topics": ["weather/now"], "types": ["scheduled"],
                                 "schedule": {"type": "weekly", "days": ["fri", "mon"], "at": "07:00"},
                                 "max_steps": 3})
    # the kitchen light named in a dynamic step's code, the topic in its text: both count as used
    steps = [sched_step({"type": "weekly", "at": "07:00", "days": ["mon", "fri"]}),
             ha_step(topic="schedule/every-morning/fired"),
             {"name": "calc", "type": "dynamic", "poll_interval": 5,
              "code": "agent.mqtt_get('weather/now'); light.kitchen"}]
    assert grade_planner(gold, js(steps)).passed
    assert not grade_planner(gold, js(steps + [ha_step(name="more")])).passed  # 4 steps


# -- labels -----------------------------------------------------------------------------------
LABEL = case("intent", labels=("actuate", "pipeline", "other"), label="actuate")


def test_label_verdicts() -> None:
    def v(out):
        return verdicts(out), out.details

    assert v(grade_label(LABEL, " 'Actuate'. ")) == ([("intent.valid_label", True, "", ""),
                                                      ("intent.label", True, "", "")], {"label": "actuate"})
    assert v(grade_label(LABEL, "Pipeline")) == ([("intent.valid_label", True, "", ""),
                                                  ("intent.label", False, "'actuate'", "'pipeline'")],
                                                 {"label": "pipeline"})
    assert v(grade_label(LABEL, "")) == ([("intent.valid_label", False, "one of actuate, pipeline, other", "(empty)")],
                                         {"label": None})
    long = "actuate " * 30
    assert v(grade_label(LABEL, long)) == ([("intent.valid_label", False, "one of actuate, pipeline, other",
                                             ("actuate " * 20)[:157] + "...")], {"label": None})
    assert grade_label(LABEL, "`actuate.`").passed and grade_label(LABEL, '"other"').details == {"label": "other"}
