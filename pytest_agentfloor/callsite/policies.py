"""Scripted call-site policies: they test the harness and graders, never stand in for a model.

``oracle`` answers each case's reference output. ``over_actuate`` and ``always_refuse`` are the
two degenerate ways seed 001 found small models resolve the accuracy/refusal trade-off at the
actuator: act on a real device whenever asked (correct on every actionable request, acting on
every impossible one), or return the empty list to everything. Ladder fault policies, run on a
call-site case, give an output that no contract accepts.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the case answers through CallSiteCase.scripted_output, which imports this module
    from .schema import CallSiteCase

_SERVICE = {"light": "turn_on", "switch": "turn_on", "fan": "turn_on", "media_player": "turn_off",
            "lock": "unlock", "cover": "open_cover", "climate": "set_temperature", "vacuum": "start"}


def _nearest_entity(case: "CallSiteCase") -> dict[str, object]:
    """A real device of the site that shares the most words with the request: a substitution."""
    assert case.installation is not None
    words = set(re.findall(r"[a-z]+", case.prompt.lower()))
    best = max(case.installation.entities,
               key=lambda e: (len(words & set(re.findall(r"[a-z]+", f"{e.id} {e.name} {e.area}".lower()))),
                              e.id.split(".")[0] in _SERVICE))
    domain = best.id.split(".")[0]
    action: dict[str, object] = {"domain": domain, "service": _SERVICE.get(domain, "turn_on"), "entity_id": best.id}
    if domain == "climate":
        action["service_data"] = {"temperature": 21}
    return action


def over_actuate(case: "CallSiteCase") -> str:
    if case.grader == "actuator" and not case.actions:
        return json.dumps([_nearest_entity(case)])
    if case.grader == "planner" and case.plan is not None and case.plan.refuse:
        act = _nearest_entity(case)
        return json.dumps([{"name": "do-it-anyway", "type": "ha_actuator", "description": case.prompt[:60],
                            "mqtt_topics": ["homeassistant/state_changes/#"], "actions": [act],
                            "detection_filter": None, "cooldown_seconds": 60}])
    return case.reference


def always_refuse(case: "CallSiteCase") -> str:
    return "[]"


def callsite_output(policy: str, case: "CallSiteCase") -> str:
    if policy == "oracle":
        return case.reference
    if policy == "over_actuate":
        return over_actuate(case)
    if policy == "always_refuse":
        return always_refuse(case)
    return "I was not able to finish this task."
