"""Each call-site grader rule on hand-made outputs: one output that passes, one that fails it."""

from __future__ import annotations

import pytest

from pytest_agentfloor.callsite.graders import (
    HA_STATE_TOPIC, grade_actuator, grade_codegen, grade_label, grade_planner,
)

from .helpers import case, js


def first(outcome):  # the rule an item reports
    v = outcome.first_failed
    return None if v is None else v.code


# -- labels ---------------------------------------------------------------------------------
LABEL = case("intent", labels=("actuate", "pipeline", "other"), label="actuate")


@pytest.mark.parametrize("output", ["actuate", " actuate\n", "Actuate.", '"actuate"', "`actuate`"])
def test_label_passes_on_the_label_alone(output: str) -> None:
    assert grade_label(LABEL, output).passed


@pytest.mark.parametrize("output, rule", [
    ("pipeline", "intent.label"),
    ("actuate because the user wants it", "intent.valid_label"),
    ("", "intent.valid_label"),
    ("turn_on", "intent.valid_label"),
])
def test_label_fails_on_another_label_or_prose(output: str, rule: str) -> None:
    out = grade_label(LABEL, output)
    assert first(out) == rule
    assert out.first_failed.expected and out.first_failed.observed


# -- actuator ------------------------------------------------------------------------------
ON = {"domain": "light", "service": "turn_on", "entity_id": "light.kitchen"}
DIM = {**ON, "service_data": {"brightness_pct": 40}}
RED = {"domain": "light", "service": "turn_on", "entity_id": "light.strip", "service_data": {"rgb_color": [255, 0, 0]}}
KETTLE = {"domain": "switch", "service": "turn_on", "entity_id": "switch.kettle"}


def test_actuator_exact_set_order_free_numbers_normalised() -> None:
    two = case("actuator", actions=[DIM, KETTLE])
    assert grade_actuator(two, js([KETTLE, DIM])).passed
    assert grade_actuator(two, js([KETTLE, {**ON, "service_data": {"brightness_pct": 40.0}}])).passed
    assert grade_actuator(two, "```json\n" + js([DIM, KETTLE]) + "\n```").passed


def test_actuator_list_order_inside_service_data_matters() -> None:
    c = case("actuator", actions=[RED])
    assert grade_actuator(c, js([RED])).passed
    blue = {**RED, "service_data": {"rgb_color": [0, 0, 255]}}
    assert first(grade_actuator(c, js([blue]))) == "actuator.service_call"


@pytest.mark.parametrize("output", ["not json", js({"domain": "light"}), js([{"domain": "light"}]),
                                    js([{**ON, "colour": "red"}])])
def test_actuator_format(output: str) -> None:
    assert first(grade_actuator(case("actuator", actions=[ON]), output)) == "actuator.format"


def test_actuator_hallucinated_entity() -> None:
    out = grade_actuator(case("actuator", actions=[ON]), js([{**ON, "entity_id": "light.kitchen_main"}]))
    assert first(out) == "actuator.entity"
    assert out.details["hallucinated"] and not out.details["substitution"]


def test_actuator_refusal_required_for_an_absent_device() -> None:
    c = case("actuator", actions=[])
    ok = grade_actuator(c, "[]")
    assert ok.passed and ok.details["refused"] and not ok.details["acted"]
    bad = grade_actuator(c, js([ON]))
    assert first(bad) == "actuator.refusal"
    assert bad.details["acted"] and bad.details["substitution"]  # a real device of the site


def test_actuator_substitution_extra_and_missed_are_told_apart() -> None:
    c = case("actuator", actions=[ON])
    sub = grade_actuator(c, js([{**ON, "entity_id": "light.hall"}]))
    assert first(sub) == "actuator.substitution" and sub.details["substitution"]
    extra = grade_actuator(c, js([ON, KETTLE]))
    assert first(extra) == "actuator.extra_action"
    missed = grade_actuator(c, "[]")
    assert first(missed) == "actuator.missed" and missed.details["refused"]
    twice = grade_actuator(c, js([ON, ON]))
    assert first(twice) == "actuator.extra_action"


def test_actuator_wrong_service_and_incomplete_multi() -> None:
    c = case("actuator", actions=[ON, KETTLE])
    assert first(grade_actuator(c, js([{**ON, "service": "turn_off"}, KETTLE]))) == "actuator.service_call"
    assert first(grade_actuator(c, js([ON]))) == "actuator.incomplete"


# -- planner -------------------------------------------------------------------------------
def ha_step(entity: str = "light.hall", topic: str = HA_STATE_TOPIC, **kw) -> dict:
    return {"name": "hall-light", "type": "ha_actuator", "description": "d", "mqtt_topics": [topic],
            "actions": [{"domain": "light", "service": "turn_on", "entity_id": entity}],
            "detection_filter": {"entity_id": "binary_sensor.hall_motion"}, "cooldown_seconds": 30, **kw}


def sched_step(schedule: dict, name: str = "every-morning") -> dict:
    return {"name": name, "type": "scheduled", "description": "d", "schedule": schedule,
            "publish_topic": f"schedule/{name}/fired"}


PLAN = case("planner", plan={"entities": ["light.hall"]})


def test_planner_valid_plan_passes() -> None:
    assert grade_planner(PLAN, js([ha_step()])).passed
    chain = [sched_step({"type": "weekly", "at": "07:30", "days": ["mon", "fri"]}),
             ha_step(topic="schedule/every-morning/fired")]
    assert grade_planner(case("planner", plan={"entities": ["light.hall"], "types": ["scheduled"],
                                               "schedule": {"type": "weekly", "at": "07:30"}}), js(chain)).passed


@pytest.mark.parametrize("output", ["plan: turn on the hall light", js({"steps": []}), js(["step"])])
def test_planner_format(output: str) -> None:
    assert first(grade_planner(PLAN, output)) == "planner.format"


def test_planner_refusal_both_ways() -> None:
    infeasible = case("planner", plan={"refuse": True})
    assert grade_planner(infeasible, "[]").passed
    assert first(grade_planner(infeasible, js([ha_step()]))) == "planner.refusal"
    assert first(grade_planner(PLAN, "[]")) == "planner.refusal"


def test_planner_type_and_fields() -> None:
    assert first(grade_planner(PLAN, js([ha_step(type="webhook")]))) == "planner.type"
    assert first(grade_planner(PLAN, js([ha_step(name="Hall Light")]))) == "planner.type"
    assert first(grade_planner(PLAN, js([ha_step(mqtt_topics=[])]))) == "planner.fields"
    dyn = {"name": "x", "type": "dynamic", "description": "d", "poll_interval": "often", "code": ""}
    assert first(grade_planner(PLAN, js([ha_step(), dyn]))) == "planner.fields"


def test_planner_entity_resolved_not_described() -> None:
    out = grade_planner(PLAN, js([ha_step(entity="the hall light")]))
    assert first(out) == "planner.entity" and "description" in out.first_failed.observed
    out = grade_planner(PLAN, js([ha_step(entity="light.hallway")]))
    assert first(out) == "planner.entity" and "not in the registry" in out.first_failed.observed


@pytest.mark.parametrize("schedule", [{"type": "daily", "at": "7am"}, {"type": "weekly", "at": "07:00", "days": []},
                                      {"type": "weekly", "at": "07:00", "days": ["monday"]},
                                      {"type": "interval", "seconds": 0}, {"type": "cron", "expr": "* * * * *"},
                                      {"type": "daily", "at": "25:00"}])
def test_planner_schedule_well_formed(schedule: dict) -> None:
    plan = [sched_step(schedule), ha_step(topic="schedule/every-morning/fired")]
    assert first(grade_planner(PLAN, js(plan))) == "planner.schedule"


def test_planner_topics_must_be_published_by_someone() -> None:
    assert grade_planner(PLAN, js([ha_step(topic="weather/now")])).passed  # a running agent's topic
    out = grade_planner(PLAN, js([ha_step(topic="sensors/hall/motion")]))
    assert first(out) == "planner.topic"


def test_planner_case_requirements() -> None:
    reuse = case("planner", plan={"entities": ["light.hall"], "topics": ["weather/now"], "forbid_types": ["dynamic"]})
    assert grade_planner(reuse, js([ha_step(topic="weather/now")])).passed
    assert first(grade_planner(reuse, js([ha_step()]))) == "planner.requirements"
    dyn = {"name": "my-weather", "type": "dynamic", "description": "d", "poll_interval": 60, "code": "x"}
    assert first(grade_planner(reuse, js([ha_step(topic="weather/now"), dyn]))) == "planner.requirements"
    wants_kitchen = case("planner", plan={"entities": ["light.kitchen"]})
    assert first(grade_planner(wants_kitchen, js([ha_step()]))) == "planner.requirements"
    timed = case("planner", plan={"schedule": {"type": "daily", "at": "06:00"}})
    plan = [sched_step({"type": "daily", "at": "06:30"}), ha_step(topic="schedule/every-morning/fired")]
    assert first(grade_planner(timed, js(plan))) == "planner.requirements"


# -- codegen -------------------------------------------------------------------------------
SUB = case("codegen", code={"functions": ["setup"], "uses": ["agent.subscribe", "agent.publish"]})
GOOD = '''
async def setup(agent):
    import json

    async def on_msg(payload):
        await agent.publish("out/topic", json.dumps(payload))

    agent.subscribe("in/topic", on_msg)
'''


def test_codegen_good_code_passes() -> None:
    assert grade_codegen(SUB, GOOD).passed
    assert grade_codegen(SUB, "```python\n" + GOOD + "\n```").passed


@pytest.mark.parametrize("source, rule", [
    ("async def setup(agent)\n    pass", "codegen.parse"),
    ("async def process(agent):\n    pass", "codegen.functions"),
    ("def setup(agent):\n    pass", "codegen.functions"),
    ("async def setup(agent, extra):\n    pass", "codegen.functions"),
    ("async def setup(agent):\n    pass\nasync def handle_task(agent):\n    pass", "codegen.functions"),
    ("import json\n" + GOOD, "codegen.module_import"),
    (GOOD.replace('agent.subscribe("in/topic", on_msg)', 'await agent.subscribe("in/topic", on_msg)'),
     "codegen.await_sync"),
    (GOOD + "    w = await agent.window('x', seconds=5)\n", "codegen.await_sync"),
    (GOOD + "    await agent.persist('k', 1)\n", "codegen.await_sync"),
    (GOOD.replace('await agent.publish', 'agent.publish'), "codegen.await_sync"),
    (GOOD.replace('agent.subscribe("in/topic", on_msg)', 'agent.subscribe("in/topic")'), "codegen.subscribe"),
    (GOOD.replace("async def on_msg(payload)", "async def on_msg(topic, payload)"), "codegen.subscribe"),
    (GOOD.replace("async def on_msg(payload)", "def on_msg(payload)"), "codegen.subscribe"),
    (GOOD.replace("on_msg)", "lambda p: None)"), "codegen.subscribe"),
    (GOOD + "\nasync def process(agent):\n    while True:\n        await agent.log('x')\n", "codegen.loop"),
    (GOOD.replace("import json", "import openai"), "codegen.own_llm"),
    ("async def setup(agent):\n    async def cb(p):\n        pass\n    agent.subscribe('t', cb)\n", "codegen.uses"),
])
def test_codegen_rule_fails(source: str, rule: str) -> None:
    out = grade_codegen(SUB, source)
    assert first(out) == rule, out.verdicts


def test_codegen_loop_outside_process_is_allowed() -> None:
    src = GOOD + "\nasync def process(agent):\n    for _ in range(3):\n        await agent.log('x')\n"
    assert grade_codegen(SUB, src).passed


def test_codegen_is_never_executed(tmp_path) -> None:
    marker = tmp_path / "ran"
    src = GOOD + f"\nopen({str(marker)!r}, 'w').write('x')\n"
    grade_codegen(SUB, src)
    assert not marker.exists()
