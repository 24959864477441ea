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
    assert out.details == {"refused": False, "actionable": True}


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
    # real registries hold ids with upper-case letters (issue 25, point 5): such an id is unknown, not a description
    failing(grade_planner(PLAN, js([ha_step(entity="Light.Hall")])), 4, reg, "'Light.Hall' is not in the registry")
    failing(grade_planner(PLAN, js([ha_step(entity="the hall light")])), 4, reg,
            "'the hall light' is a description, not an entity id")
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
    out = grade_planner(PLAN, js(plan))
    failing(out, 5, "a well-formed schedule", f"every-morning: {problem}")
    assert out.details == {"refused": False, "actionable": True}


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
    assert out.details == {"refused": False, "actionable": True}
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
    assert out.details == {"refused": False, "actionable": True}


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


# -- actuator ---------------------------------------------------------------------------------
from pytest_agentfloor.callsite.graders import action_key, grade_actuator, grade_codegen  # noqa: E402

from .test_graders import GOOD, KETTLE, ON, SUB  # noqa: E402

ON_GOLD = '[{"domain": "light", "entity_id": "light.kitchen", "service": "turn_on", "service_data": {}}]'
ON_JS = '[{"domain": "light", "entity_id": "light.kitchen", "service": "turn_on"}]'


def details(acted=True, refused=False, substitution=False, hallucinated=False, actionable=True) -> dict:
    return {"acted": acted, "refused": refused, "substitution": substitution, "hallucinated": hallucinated,
            "actionable": actionable}


def test_actuator_format_verdicts() -> None:
    c = case("actuator", actions=[ON])
    out = grade_actuator(c, "not json")
    assert verdicts(out) == [("actuator.format", False, "a JSON array of service calls",
                              "not JSON (Expecting value at char 0): not json")]
    assert out.details == details(acted=False)
    shape = "objects {domain, service, entity_id, service_data}"
    for bad in ({**ON, "colour": "red"}, {**ON, "service_data": [1]}, {**ON, "entity_id": 3}, "light.kitchen"):
        out = grade_actuator(c, js([ON, bad]))
        text = bad if isinstance(bad, str) else json.dumps(bad, sort_keys=True)
        assert verdicts(out) == [("actuator.format", False, shape, text)]
        assert out.details == details(acted=False)
    assert grade_actuator(c, js([{**ON, "service_data": {}}])).passed


def test_actuator_entity_and_refusal_verdicts() -> None:
    c = case("actuator", actions=[ON])
    out = grade_actuator(c, js([{**ON, "entity_id": "light.kitchen_main"}, ON, {**ON, "entity_id": "light.x"}]))
    assert verdicts(out) == [("actuator.format", True, "", ""), (
        "actuator.entity", False, "entity ids from site_t's registry",
        "light.kitchen_main, light.x not in the registry (hallucinated)")]
    assert out.details == details(hallucinated=True)
    absent = case("actuator", actions=[])
    out = grade_actuator(absent, js([ON]))
    assert verdicts(out)[1:] == [("actuator.entity", True, "", ""),
                                 ("actuator.refusal", False, "[] (the site has no such device)", f"1 call(s): {ON_JS}")]
    assert out.details == details(substitution=True, actionable=False)
    out = grade_actuator(absent, "[]")
    assert verdicts(out)[1:] == [("actuator.entity", True, "", ""), ("actuator.refusal", True, "", "")]
    assert out.details == details(acted=False, refused=True, actionable=False)


def test_actuator_action_verdicts() -> None:
    c = case("actuator", actions=[ON])
    hall = {**ON, "entity_id": "light.hall"}

    def last(output: str) -> tuple:
        out = grade_actuator(c, output)
        assert verdicts(out)[:2] == [("actuator.format", True, "", ""), ("actuator.entity", True, "", "")]
        assert len(out.verdicts) == 3
        return verdicts(out)[2], out.details

    assert last(js([ON])) == (("actuator.actions", True, "", ""), details())
    assert last("[]") == (("actuator.missed", False, ON_GOLD, "[] (refused an actionable request)"),
                          details(acted=False, refused=True))
    assert last(js([hall])) == (("actuator.substitution", False, "act on light.kitchen",
                                 "acted on light.hall instead"), details(substitution=True))
    assert last(js([ON, hall])) == (("actuator.extra_action", False, "no actuation beyond the request",
                                     'also [{"domain": "light", "entity_id": "light.hall", "service": "turn_on"}]'),
                                    details(substitution=True))
    off = {**ON, "service": "turn_off"}
    assert last(js([off])) == (("actuator.service_call", False, ON_GOLD,
                                '[{"domain": "light", "entity_id": "light.kitchen", "service": "turn_off"}]'),
                               details())
    assert last(js([ON, ON])) == (("actuator.extra_action", False, "each call once", "2 calls, 1 distinct"), details())
    two = case("actuator", actions=[ON, KETTLE])
    out = grade_actuator(two, js([ON]))
    assert verdicts(out)[2] == ("actuator.incomplete", False, cut160(_gold_text(two)),
                                'missing [{"domain": "switch", "entity_id": "switch.kettle", "service": "turn_on", '
                                '"service_data": {}}]')
    # a wrong service on one of two gold entities shows the gold calls still missing
    out = grade_actuator(two, js([off, KETTLE]))
    assert verdicts(out)[2] == ("actuator.service_call", False, ON_GOLD, json.dumps([off], sort_keys=True))


def _gold_text(c) -> str:
    """The gold calls as the strict parser's messages show them (service_data spelled out, {} when none)."""
    return json.dumps([{"domain": a.domain, "service": a.service, "entity_id": a.entity_id,
                        "service_data": a.service_data or {}} for a in c.actions], sort_keys=True)


def test_action_key_normalises_numbers_and_keeps_list_order() -> None:
    call = {"domain": "light", "service": "turn_on", "entity_id": "light.strip",
            "service_data": {"rgb": [255, 0, 0.5], "n": 3, "on": False, "none": None, "name": "x", "sub": {"b": 1, "a": 2}}}
    assert action_key(call) == ("light", "turn_on", "light.strip",
                                (("n", 3.0), ("name", "x"), ("none", None), ("on", ("bool", False)), ("rgb", (255.0, 0.0, 0.5)),
                                 ("sub", (("a", 2.0), ("b", 1.0)))))
    assert action_key({"domain": "light"}) == ("light", None, None, ())
    assert action_key({**call, "service_data": None})[3] == ()
    # a boolean is not a number, although Python's True == 1
    on = {"domain": "light", "service": "turn_on", "entity_id": "light.strip"}
    assert action_key({**on, "service_data": {"brightness": True}}) != action_key({**on, "service_data": {"brightness": 1}})
    assert action_key({**on, "service_data": {"x": False}}) != action_key({**on, "service_data": {"x": 0.0}})
    assert action_key({**on, "service_data": {"x": True}}) == action_key({**on, "service_data": {"x": True}})


# -- codegen ----------------------------------------------------------------------------------
@pytest.mark.parametrize("source,n,expected,observed", [
    ("async def setup(agent)\n    pass", 0, "Python source", "syntax error line 1: expected ':'"),
    ("async def process(agent):\n    pass", 1, "async def setup(...) at module level", "not defined"),
    ("def setup(agent):\n    pass", 1, "async def setup", "def setup (not async)"),
    ("async def setup(agent, extra):\n    pass", 1, "setup takes 1 argument(s)", "2 positional"),
    ("async def setup(agent, *rest):\n    pass", 1, "setup takes 1 argument(s)", "1 positional plus extras"),
    ("async def setup(agent, *, k=1):\n    pass", 1, "setup takes 1 argument(s)", "1 positional plus extras"),
    ("async def setup(agent):\n    pass\ndef process(agent):\n    pass", 1, "async def process",
     "def process (not async)"),
    ("import json\n" + GOOD, 2, "imports inside functions", "module-level import at line 1"),
    (GOOD.replace('agent.subscribe("in/topic", on_msg)', 'await agent.subscribe("in/topic", on_msg)'), 3,
     "agent.subscribe(...) called without await (it is synchronous)", "await agent.subscribe(...) at line 7"),
    (GOOD.replace("await agent.publish", "agent.publish"), 3, "await agent.publish(...)",
     "agent.publish(...) not awaited at line 5"),
    (GOOD + "    agent.llm.chat('hi')\n", 3, "await agent.llm.chat(...)", "agent.llm.chat(...) not awaited at line 8"),
    (GOOD.replace('agent.subscribe("in/topic", on_msg)', 'agent.subscribe("in/topic")'), 4,
     "agent.subscribe(topic, callback)", "no callback at line 7"),
    (GOOD.replace('agent.subscribe("in/topic", on_msg)', 'agent.subscribe("in/topic", callback=on_msg)'), None, "", ""),
    (GOOD.replace("on_msg)", "lambda p: None)"), 4, "an async function as the callback", "lambda p: None at line 7"),
    (GOOD.replace("on_msg)", "nothing)"), 4, "an async function as the callback", "nothing at line 7"),
    (GOOD.replace("async def on_msg(payload)", "async def on_msg(topic, payload)"), 4,
     "callback on_msg(payload) with one argument", "2 argument(s)"),
    (GOOD.replace("async def on_msg(payload)", "async def on_msg(payload, *more)"), 4,
     "callback on_msg(payload) with one argument", "1 argument(s)"),
    (GOOD + "\nasync def process(agent):\n    while 1:\n        await agent.log('x')\n", 5,
     "one iteration per process() call", "endless while loop at line 10"),
    (GOOD + "\nasync def process(agent):\n    while 0:\n        await agent.log('x')\n", None, "", ""),
    (GOOD + "\nasync def process(agent):\n    while agent:\n        await agent.log('x')\n", None, "", ""),
    (GOOD + "\nasync def process(agent):\n    while None:\n        await agent.log('x')\n", None, "", ""),
    (GOOD.replace("import json", "from openai.types import X"), 6, "agent.llm.chat for model calls",
     "imports openai.types"),
    (GOOD.replace("import json", "import json, llama_cpp"), 6, "agent.llm.chat for model calls", "imports llama_cpp"),
    (GOOD.replace("import json", "from . import x"), None, "", ""),
    ("async def setup(agent):\n    async def cb(p):\n        pass\n    agent.subscribe('t', cb)\n", 7,
     "calls agent.subscribe, agent.publish", "never calls agent.publish"),
])
def test_codegen_verdicts(source: str, n: int | None, expected: str, observed: str) -> None:
    """Line numbers count from the first non-blank line (the output is stripped like a fence)."""
    rules = ["codegen.parse", "codegen.functions", "codegen.module_import", "codegen.await_sync", "codegen.subscribe",
             "codegen.loop", "codegen.own_llm", "codegen.uses"]
    out = grade_codegen(SUB, source)
    if n is None:
        assert verdicts(out) == [(r, True, "", "") for r in rules]
    else:
        assert verdicts(out) == [(r, True, "", "") for r in rules[:n]] + [(rules[n], False, expected, observed)]
    assert out.details == {}


def test_codegen_uses_counts_plain_and_method_calls() -> None:
    c = case("codegen", code={"functions": ["setup"], "uses": ["run_in_executor", "print", "agent.llm.chat"]})
    src = ("async def setup(agent):\n    loop.run_in_executor(None, f)\n    print(1)\n"
           "    await agent.llm.chat('x')\n")
    assert grade_codegen(c, src).passed
    assert grade_codegen(c, src.replace("print(1)", "x = print")).first_failed.observed == "never calls print"


def test_only_quotes_and_a_full_stop_are_stripped_from_a_label() -> None:
    for output in ("Xactuate", "actuateX", "actuateX.", "xactuate.", "(actuate)"):
        assert grade_label(LABEL, output).first_failed.code == "intent.valid_label", output
    for output in ('"actuate".', "'actuate.'", "`actuate`.", " actuate . "):
        assert grade_label(LABEL, output).passed, output


def test_calls_on_other_objects_are_not_the_agent_api() -> None:
    src = GOOD + "    client.publish('x')\n    await other.subscribe('t')\n    x.y.llm.chat('q')\n"
    assert grade_codegen(SUB, src).passed


def test_schedule_values_compare_lists_as_sets_and_scalars_exactly() -> None:
    from pytest_agentfloor.callsite.graders import _matches

    assert _matches(["mon", "fri"], ["fri", "mon"]) and _matches([1, "a"], ["a", "1"])
    assert not _matches("utc", ["u", "t", "c"]) and not _matches(["u", "t", "c"], "utc")
    assert not _matches(["m"], "m") and _matches(6, 6.0) and not _matches("6", 6)


def test_texts_up_to_160_characters_are_shown_whole() -> None:
    for n, shown in ((160, "y" * 160), (161, "y" * 157 + "...")):
        assert grade_label(LABEL, "y" * n).first_failed.observed == shown


def test_multi_entity_texts_list_every_entity() -> None:
    two = case("actuator", actions=[ON, KETTLE])
    strip = {"domain": "light", "service": "turn_on", "entity_id": "light.strip"}
    out = grade_actuator(two, js([{**ON, "entity_id": "light.hall"}, strip]))
    assert verdicts(out)[2] == ("actuator.substitution", False, "act on light.kitchen, switch.kettle",
                                "acted on light.hall, light.strip instead")
    out = grade_codegen(SUB, "async def setup(agent):\n    pass")
    assert out.first_failed.observed == "never calls agent.subscribe, agent.publish"
