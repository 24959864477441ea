"""Validity audit of the shipped call-site tables.

Every case's reference output passes its grader, and each mutation a broken model would make is
rejected by the rule meant to catch it: an extra action, a substituted entity, a missing refusal,
a described-not-resolved entity, an awaited synchronous call, another label.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_agentfloor.callsite.graders import GRADERS, SITE_GRADERS
from pytest_agentfloor.callsite.schema import CallSiteCase
from pytest_agentfloor.kinds import load_file

ROOT = Path(__file__).resolve().parents[2] / "cases" / "callsite"


def _cases() -> list[CallSiteCase]:
    out = []
    for path in sorted(ROOT.glob("*.toml")):
        _, entries = load_file(path)
        out += [e.resolve("v0", "i0") for e in entries]
    return out


CASES = _cases()
BY_GRADER = {g: [c for c in CASES if c.grader == g] for g in SITE_GRADERS}


def _rule(case: CallSiteCase, output: str, parser: str | None = None) -> str | None:
    """The rule an output fails, read with the case's parser (the default: deployed) or the one named."""
    if parser is not None:
        case = case.model_copy(update={"parser": parser})
    out = GRADERS[case.grader](case, output)
    return None if out.first_failed is None else out.first_failed.code


def test_suite_size_and_sub_groups() -> None:
    counts = {g: len(cs) for g, cs in BY_GRADER.items()}
    assert sum(counts.values()) >= 150, counts
    assert all(n >= 20 for n in counts.values()), counts
    groups = {c.group for c in BY_GRADER["actuator"]}
    assert groups == {f"{s}_{x}" for s in "ab" for x in ("control", "flip", "nearmiss", "refusal", "same")}
    namings = {c.naming for c in BY_GRADER["actuator"]}
    assert namings == {"name", "location", "name_location", "attribute", "switch", "multi", "refusal"}
    assert {c.group for c in BY_GRADER["planner"]} == {"chain", "create", "entity", "infeasible", "reuse_agent",
                                                        "reuse_topic", "schedule", "topic"}
    assert {c.group for c in BY_GRADER["codegen"]} == {"blocking", "cleanup", "contract", "llm", "oneshot", "poll",
                                                        "publish", "schema", "state", "subscribe", "task", "window"}
    assert {c.group for c in BY_GRADER["intent"]} == {"crud", "delegate", "lexical", "mixed", "multi", "query",
                                                       "sched", "verbose"}
    assert {c.group for c in BY_GRADER["action_label"]} == {"camera", "create", "disable", "edit", "existence",
                                                             "hardware", "list", "state", "unknown"}
    assert len({c.id for c in CASES}) == len(CASES)
    assert all(c.group in c.id for c in CASES)


def test_cross_site_groups_agree_with_the_registries() -> None:
    """flip: the other site owns a device of that name; same: both own the gold entity."""
    regs = {c.installation.id: c.installation for c in BY_GRADER["actuator"]}
    for c in BY_GRADER["actuator"]:
        other = regs["site_b" if c.installation.id == "site_a" else "site_a"]
        assert c.group.startswith("a_" if c.installation.id == "site_a" else "b_"), c.id
        if c.cross_site in ("control", "same"):
            assert c.actions, c.id
        else:
            assert c.actions == (), c.id
        if c.cross_site == "same":
            assert all(a.entity_id in other.entity_ids() for a in c.actions), c.id
        if c.cross_site == "control":
            assert any(a.entity_id not in other.entity_ids() for a in c.actions), c.id


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_reference_passes(case: CallSiteCase) -> None:
    assert _rule(case, case.reference) is None


@pytest.mark.parametrize("case", [c for c in BY_GRADER["actuator"] if c.actions], ids=lambda c: c.id)
def test_actuator_extra_action_and_substitution_rejected(case: CallSiteCase) -> None:
    gold = json.loads(case.reference)
    named = {a["entity_id"] for a in gold}
    others = [e.id for e in case.installation.entities if e.id not in named]
    extra = gold + [{"domain": others[0].split(".")[0], "service": "turn_on", "entity_id": others[0]}]
    assert _rule(case, json.dumps(extra)) == "actuator.extra_action"
    same_domain = [e for e in others if e.split(".")[0] == gold[0]["entity_id"].split(".")[0]] + others
    substituted = [{**gold[0], "entity_id": same_domain[0]}] + gold[1:]
    assert _rule(case, json.dumps(substituted)) == "actuator.substitution"


@pytest.mark.parametrize("case", [c for c in BY_GRADER["actuator"] if not c.actions], ids=lambda c: c.id)
def test_actuator_missing_refusal_rejected(case: CallSiteCase) -> None:
    device = case.installation.entities[0].id
    acted = [{"domain": device.split(".")[0], "service": "turn_on", "entity_id": device}]
    assert _rule(case, json.dumps(acted)) == "actuator.refusal"


@pytest.mark.parametrize("case", BY_GRADER["planner"], ids=lambda c: c.id)
def test_planner_mutations_rejected(case: CallSiteCase) -> None:
    plan = json.loads(case.reference)
    if case.plan.refuse:
        device = case.installation.entities[0]
        step = {"name": "anyway", "type": "ha_actuator", "description": "d",
                "mqtt_topics": ["homeassistant/state_changes/#"],
                "actions": [{"domain": device.id.split(".")[0], "service": "turn_on", "entity_id": device.id}],
                "detection_filter": None, "cooldown_seconds": 5}
        assert _rule(case, json.dumps([step])) == "planner.refusal"
        return
    names = {e.id: e.name for e in case.installation.entities}
    step = next(s for s in plan if s["type"] == "ha_actuator")
    action = step["actions"][0]
    action["entity_id"] = names[action["entity_id"]].lower()  # described, not resolved
    # the strict parser checks every action entity against the registry; the deployed one (like the
    # authors' harness) fails the plan because it does not name the device the case requires
    assert _rule(case, json.dumps(plan), "strict") == "planner.entity"
    assert _rule(case, json.dumps(plan)) == "planner.requirements"
    assert _rule(case, "[]") == "planner.refusal"


@pytest.mark.parametrize("case", BY_GRADER["codegen"], ids=lambda c: c.id)
def test_codegen_awaited_sync_call_rejected(case: CallSiteCase) -> None:
    src = case.reference
    pattern = re.compile(r"(?<!await )agent\.(persist|recall|subscribe|window|declare_contract)\(")
    if pattern.search(src):
        mutated = pattern.sub(lambda m: "await " + m.group(0), src, count=1)
    else:
        mutated = re.sub(r"(async def \w+\(agent[^)]*\):\n)", r'\1    await agent.recall("audit")\n', src, count=1)
    assert mutated != src
    assert _rule(case, mutated) == "codegen.await_sync"
    assert _rule(case, mutated, "strict") == "codegen.await_sync"


@pytest.mark.parametrize("case", BY_GRADER["intent"] + BY_GRADER["action_label"], ids=lambda c: c.id)
def test_label_mutation_rejected(case: CallSiteCase) -> None:
    other = next(label for label in case.labels if label != case.label)
    assert _rule(case, other) == f"{case.grader}.label"
    assert _rule(case, f"The label is {case.label}") == f"{case.grader}.valid_label"
