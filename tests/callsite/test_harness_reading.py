"""The harness reading against the deployed one, rule by rule, in both directions.

``harness`` reproduces the authors' released harness (waldiez/slm-callsite-eval, harness/evalharness.py)
where it contradicts seed 001 or checks less than the running agent needs; everywhere else it reads a
reply as ``deployed`` does. Each test is a hand-made reply on which the two part ways, and which way.
"""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from pytest_agentfloor import options
from pytest_agentfloor.callsite.graders import grade_actuator, grade_codegen, grade_label, grade_planner
from pytest_agentfloor.callsite.parsers import PARSERS, READINGS, reading
from pytest_agentfloor.callsite.schema import ParserName, PlannerGold

from .helpers import case, js


def rules(grader, c, output: str) -> tuple[str | None, str | None]:
    """(first failed rule under deployed, under harness); None: passed."""
    out = []
    for parser in ("deployed", "harness"):
        o = grader(c.model_copy(update={"parser": parser}), output)
        out.append(None if o.passed else o.first_failed.code)
    return out[0], out[1]


def test_every_parser_has_its_rules_and_the_option_lists_the_same_names() -> None:
    assert PARSERS == ("deployed", "strict", "harness") == get_args(ParserName)
    assert set(READINGS) == set(PARSERS) and options.CALLSITE_PARSERS == PARSERS
    with pytest.raises(KeyError):
        reading("lenient")


# -- where harness reads as deployed ------------------------------------------------------------
def test_labels_and_json_search_are_read_alike() -> None:
    intent = case("intent", labels=("actuate", "other"), label="other")
    assert rules(grade_label, intent, "OTHER\n\nThis request mixes") == (None, None)
    refuse = case("actuator", actions=[])
    assert rules(grade_actuator, refuse, "```json\n[]\n```\n\nThere is no lock entity.") == (None, None)
    assert rules(grade_actuator, refuse, '{"calls": []}') == ("actuator.format", "actuator.format")


# -- actuator ---------------------------------------------------------------------------------------
DIM = {"domain": "light", "service": "turn_on", "entity_id": "light.kitchen", "service_data": {"brightness_pct": 30}}


def test_service_data_the_gold_names_is_compared_whole_by_the_harness() -> None:
    c = case("actuator", actions=[DIM])
    extra_key = [{**DIM, "service_data": {"brightness_pct": 30, "transition": 2}}]
    assert rules(grade_actuator, c, js(extra_key)) == (None, "actuator.service_call")
    assert rules(grade_actuator, c, js([{**DIM, "service_data": {"brightness_pct": 30.0}}])) == (None, None)


def test_service_data_the_gold_leaves_out_is_not_read_by_the_harness() -> None:
    c = case("actuator", actions=[{"domain": "light", "service": "turn_on", "entity_id": "light.kitchen"}])
    odd = [{"domain": "light", "service": "turn_on", "entity_id": "light.kitchen", "service_data": "bright"}]
    assert rules(grade_actuator, c, js(odd)) == ("actuator.format", None)


def test_the_harness_checks_only_that_each_gold_call_is_matched_and_the_count() -> None:
    """Two gold calls one emitted call satisfies both: the other emitted call is never compared."""
    c = case("actuator", actions=[
        {"domain": "light", "service": "turn_on", "entity_id_any": ["light.kitchen", "light.hall"]},
        {"domain": "light", "service": "turn_on", "entity_id": "light.kitchen"}])
    out = [{"domain": "light", "service": "turn_on", "entity_id": "light.kitchen"},
           {"domain": "light", "service": "turn_on", "entity_id": "light.strip"}]
    assert rules(grade_actuator, c, js(out)) == ("actuator.extra_action", None)
    assert rules(grade_actuator, c, js(out[:1])) == ("actuator.extra_action", "actuator.extra_action")


# -- planner ----------------------------------------------------------------------------------------
INFEASIBLE = case("planner", plan={"refuse": True, "allowed_types": ["ha_actuator", "scheduled"],
                                   "must_not_contain": ["light.hall"]})


def _step(entity: str, kind: str = "ha_actuator") -> str:
    return js([{"name": "x", "type": kind, "description": "d", "mqtt_topics": ["a/b"],
                "actions": [{"domain": "lock", "service": "lock", "entity_id": entity}]}])


def test_an_infeasible_request_is_a_refusal_under_deployed_and_a_plan_under_harness() -> None:
    assert rules(grade_planner, INFEASIBLE, "[]") == (None, "planner.refusal")
    assert rules(grade_planner, INFEASIBLE, "```json\n[]\n```\nThere is no lock.") == (None, "planner.refusal")
    assert rules(grade_planner, INFEASIBLE, _step("lock.front_door")) == ("planner.refusal", None)


def test_the_harness_still_fails_an_infeasible_plan_that_names_a_forbidden_token_or_type() -> None:
    assert rules(grade_planner, INFEASIBLE, _step("light.hall")) == ("planner.refusal", "planner.requirements")
    assert rules(grade_planner, INFEASIBLE, _step("lock.front_door", "dynamic")) == ("planner.refusal", "planner.type")


def test_a_refusal_gold_takes_only_what_the_harness_grades_it_by() -> None:
    assert PlannerGold(refuse=True, allowed_types=["dynamic"], must_contain=["x"], must_not_contain=["y"]).refuse
    with pytest.raises(ValidationError, match="refuse = true takes only"):
        PlannerGold(refuse=True, entities=["light.hall"])


# -- codegen ----------------------------------------------------------------------------------------
GOLD = {"functions": ["setup", "process"]}
GOOD_SETUP = "async def setup(agent):\n    await agent.log('up')\n"


def code(body: str, gold: dict | None = None):
    return case("codegen", code=gold or GOLD), GOOD_SETUP + body


@pytest.mark.parametrize("body, deployed", [
    # a required function inside a class: async anywhere is enough for the harness
    ("class A:\n    async def process(self):\n        return 1\n", "codegen.functions"),
    # the framework calls process(agent): a second positional argument is a TypeError at run time
    ("async def process(agent, client):\n    await agent.log('x')\n", "codegen.functions"),
    # recall is synchronous: awaiting its result raises TypeError
    ("async def process(agent):\n    n = await agent.recall('n')\n", "codegen.await_sync"),
    # publish not awaited: the coroutine never runs
    ("async def process(agent):\n    agent.publish('t', {})\n", "codegen.await_sync"),
    # a callback of two arguments: the framework calls it with the payload alone
    ("async def process(agent):\n    agent.subscribe('t', cb)\n\nasync def cb(topic, payload):\n    pass\n",
     "codegen.subscribe"),
    # one iteration per call
    ("async def process(agent):\n    while True:\n        await agent.log('x')\n", "codegen.loop"),
    # a model client the harness does not list
    ("async def process(agent):\n    import litellm\n    await agent.log(litellm.__name__)\n", "codegen.own_llm"),
    # a relative import of the package itself: nothing to resolve it against in exec'd code
    ("from . import helpers\n\nasync def process(agent):\n    await agent.log('x')\n", "codegen.module_import"),
])
def test_the_run_time_contract_fails_under_deployed_only(body: str, deployed: str) -> None:
    assert rules(grade_codegen, *code(body)) == (deployed, None)


@pytest.mark.parametrize("body, harness", [
    # the harness counts positional arguments only: a keyword callback is "no callback" to it
    ("async def process(agent):\n    agent.subscribe('t', callback=cb)\n\nasync def cb(payload):\n    pass\n",
     "codegen.subscribe"),
    # it reads any .subscribe(...), not only the agent's
    ("async def process(agent):\n    import paho.mqtt.client as m\n    m.Client().subscribe('t')\n",
     "codegen.subscribe"),
    # every definition of a required name counts, also one the module body later replaces
    ("async def process(agent):\n    pass\n\nasync def process(agent):\n    await agent.log('x')\n", "codegen.stub"),
])
def test_what_the_harness_fails_and_the_running_agent_survives(body: str, harness: str) -> None:
    assert rules(grade_codegen, *code(body)) == (None, harness)


@pytest.mark.parametrize("body, rule", [
    ("import requests\n\nasync def process(agent):\n    await agent.log('x')\n", "codegen.module_import"),
    ("async def process(agent):\n    await agent.subscribe('t', cb)\n\nasync def cb(payload):\n    pass\n",
     "codegen.await_sync"),
    ("async def process(agent):\n    agent.subscribe('t')\n", "codegen.subscribe"),
    ("async def process(agent):\n    import openai\n    await agent.log('x')\n", "codegen.own_llm"),
    ("async def process(agent):\n    '''later'''\n", "codegen.stub"),
    ("async def cleanup(agent):\n    pass\n", "codegen.functions"),
])
def test_the_harness_findings_fail_under_both(body: str, rule: str) -> None:
    assert rules(grade_codegen, *code(body)) == (rule, rule)


def test_must_contain_and_stubs_allowed_read_alike() -> None:
    gold = {"functions": ["setup", "process"], "must_contain": ["custom/x"], "allow_empty_bodies": True}
    assert rules(grade_codegen, *code("async def process(agent):\n    pass\n", gold)) == ("codegen.uses", "codegen.uses")
    assert rules(grade_codegen, *code("async def process(agent):\n    pass  # custom/x\n", gold)) == (None, None)


def test_an_unawaited_log_fails_where_the_task_is_to_log() -> None:
    """agent.log is a coroutine: unawaited, its line is dropped with a RuntimeWarning and the agent runs on.
    Deployed fails it only where the case asks for logging; strict fails every one; the harness none."""
    body = "async def process(agent):\n    agent.log('total')\n"
    assert rules(grade_codegen, *code(body)) == (None, None)
    assert rules(grade_codegen, *code(body, {"functions": ["setup", "process"], "must_contain": ["agent.log"]})) == \
        ("codegen.await_sync", None)
    assert rules(grade_codegen, *code(body, {"functions": ["setup", "process"], "uses": ["agent.log"]}))[0] == \
        "codegen.await_sync"
    c, src = code(body)
    strict = grade_codegen(c.model_copy(update={"parser": "strict"}), src)
    assert strict.first_failed is not None and strict.first_failed.code == "codegen.await_sync"
    # publish, alert, mqtt_get and llm.chat unawaited never do their work: failed whatever the task
    assert rules(grade_codegen, *code("async def process(agent):\n    agent.alert('x', 'warning')\n")) == \
        ("codegen.await_sync", None)
