"""Hand-made call-site cases for grader tests (independent of the shipped tables)."""

from __future__ import annotations

import json
from typing import Any

from pytest_agentfloor.callsite.schema import Action, CallSiteCase, CodegenGold, Installation, PlannerGold

HOME = Installation.model_validate({
    "id": "site_t", "name": "test home",
    "entities": [
        {"id": "light.kitchen", "name": "Kitchen light", "area": "kitchen"},
        {"id": "light.hall", "name": "Hall light", "area": "hall"},
        {"id": "light.strip", "name": "LED strip", "attributes": {"supported_color_modes": "rgb"}},
        {"id": "switch.kettle", "name": "Kettle"},
        {"id": "binary_sensor.hall_motion", "name": "Hall motion"},
    ],
    "agents": [{"name": "weather", "publishes": ["weather/now"], "fields": ["temp_c"]}],
})


def case(grader: str, **kw: Any) -> CallSiteCase:
    """A case read with the strict parser unless ``parser`` says otherwise (the rule tests predate the
    deployed parser and pin the strict one; tests/callsite/test_parsers.py covers the deployed one)."""
    base: dict[str, Any] = dict(id="t-1", site=grader, grader=grader, group="g", system_prompt="s", prompt="p",
                                reference="", content_hash="0", parser="strict")
    if grader in ("actuator", "planner"):
        base["installation"] = HOME
    if "actions" in kw:
        kw["actions"] = tuple(Action.model_validate(a) for a in kw["actions"])
    if "plan" in kw:
        kw["plan"] = PlannerGold.model_validate(kw["plan"])
    if "code" in kw:
        kw["code"] = CodegenGold.model_validate(kw["code"])
    return CallSiteCase(**{**base, **kw})


def js(value: Any) -> str:
    return json.dumps(value)
