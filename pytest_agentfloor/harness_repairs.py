"""The repair switches (seed 002): harness changes a run can take, one per layer, with our wording.

* ``workflow_prompt`` (layer W): the system prompt's second sentence is replaced by an instruction
  to check each request before it is sent and the evidence and final state before answering;
* ``interface_guide`` (layer D): the second sentence is kept and a guide to reading the returned
  records (raw, compact, typed, linked) is inserted after it;
* ``router`` (layer R, the connector-first router): before the first request, the public tool
  descriptions are read for declared routes (``Route: workspace W, region R, collection C.``);
  when the user text names exactly one of them (all three coordinates as whole words), the menu
  becomes the tools that declare that route plus those that declare none. It reads the user text
  and the menu only, never the case's gold tools, reference or grader; with no route named, or
  more than one, the menu is left as it is;
* ``controller`` (the public-handoff controller, aimed at long workflows): after each model turn
  it follows the ``next_handoff`` of the last result and issues those reads itself, in turns that
  cost no model request, until a handoff is empty or invalid (handoffs.py); it never sees the case;
* ``canonical_delivery`` (the controller's wrong-layer control, layer D): tool results reach the
  model as plain JSON whatever the cell's encoding (compact and typed are undone; linked records
  stay linked, since that is a change of the stored records, not of their delivery).

A completion cap larger than the frozen one is not a repair but an arm of the cap sweep
(``cap_scale`` on a model, ``capN`` in ``--agentfloor-arms``); it is a named deviation too.

Seed 002 places the two prompt edits on its base prompt's second sentence; we apply the same
placement to whichever system prompt the model runs with (they all open with a sentence that says
what the assistant is, followed by one about using the tools). A repair is a change of the
configuration (config.repairs), so it reaches records, resume keys and cassette keys, and every
report names it as a deviation from the protocol, which itself stays frozen.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

RepairName = Literal["workflow_prompt", "interface_guide", "router", "controller", "canonical_delivery"]
REPAIRS: tuple[str, ...] = ("workflow_prompt", "interface_guide", "router", "controller", "canonical_delivery")
#: the layer each repair is aimed at (seed 002: the routed menu, V, is a lane, not a switch; the
#: controller is aimed at long workflows, with canonical delivery as its wrong-layer control)
LAYER: dict[str, str] = {"router": "R", "workflow_prompt": "W", "interface_guide": "D", "controller": "W",
                         "canonical_delivery": "D"}

WORKFLOW_SENTENCE = (
    "Before each tool request, check to yourself that it uses the right tool and operation with exactly the "
    "arguments it needs, and what the request still requires; after the last tool result, check that the "
    "evidence you gathered and the final state support your answer before you give it.")
INTERFACE_GUIDE = (
    "Read returned records by their form: a raw record holds its values as stored; a compact record names its "
    "fields with short keys, and its keys object maps each short key back to the field name; a typed record "
    "wraps each value as {\"type\", \"value\"}, each object as {\"type\": \"object\", \"fields\"} and each list as "
    "{\"type\": \"list\", \"items\"}; a linked record leaves a nested object behind as {\"$ref\": id}, whose "
    "values are only known once that id is looked up.")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
_ROUTE = re.compile(r"\broute:\s*workspace\s+([\w-]+),\s*region\s+([\w-]+),\s*collection\s+([\w-]+)", re.IGNORECASE)


def check_repairs(names: Iterable[str]) -> tuple[str, ...]:
    """Sorted, de-duplicated repair names; ValueError naming what is valid."""
    out = sorted(set(names))
    bad = [n for n in out if n not in REPAIRS]
    if bad:
        raise ValueError(f"unknown repair(s) {', '.join(bad)}; valid: {', '.join(REPAIRS)}")
    return tuple(out)


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def repaired_prompt(base: str, repairs: Sequence[str]) -> str:
    """`base` with the prompt repairs in `repairs` applied at seed 002's placement (module doc)."""
    if not repairs or not {"workflow_prompt", "interface_guide"} & set(repairs):
        return base
    parts = sentences(base)
    if len(parts) < 2:
        raise ValueError("a prompt repair edits the system prompt's second sentence; this prompt has one sentence")
    if "workflow_prompt" in repairs:
        parts[1] = WORKFLOW_SENTENCE
    if "interface_guide" in repairs:
        parts.insert(2, INTERFACE_GUIDE)
    return " ".join(parts)


def declared_route(schema: dict[str, Any]) -> tuple[str, str, str] | None:
    """The (workspace, region, collection) a tool's public description declares, lower-cased."""
    desc = str((schema.get("function") or {}).get("description") or "")
    m = _ROUTE.search(desc)
    return None if m is None else (m.group(1).lower(), m.group(2).lower(), m.group(3).lower())


def _named(text: str, route: tuple[str, str, str]) -> bool:
    words = set(re.findall(r"[\w-]+", text.lower()))
    return all(c in words for c in route)


def route_menu(user_text: str, tools: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]] | None, str]:
    """(narrowed menu or None when unchanged, outcome): narrowed, absent, ambiguous or no-change."""
    routes = {r for r in (declared_route(t) for t in tools) if r is not None}
    named = sorted(r for r in routes if _named(user_text, r))
    if not named:
        return None, "absent"
    if len(named) > 1:
        return None, "ambiguous"
    keep = [t for t in tools if declared_route(t) in (None, named[0])]
    if len(keep) == len(tools):
        return None, "no-change"
    return keep, "narrowed"


#: the arm of a configuration that changes nothing (``--agentfloor-arms none,...``)
NO_ARM = "none"
_CAP = re.compile(r"^cap(\d+)$")
MAX_CAP_SCALE = 64


def parse_arm(text: str) -> tuple[tuple[str, ...], int | None]:
    """One arm, switches joined by '+': repair names and at most one ``capN`` (completion cap x N,
    2 <= N <= 64); ``none`` is the configuration as it is. ValueError naming what is valid."""
    parts = [p.strip() for p in text.split("+") if p.strip()]
    if parts == [NO_ARM]:
        return (), None
    if not parts or NO_ARM in parts:
        raise ValueError(f"arm {text!r}: 'none' stands alone; an arm is switches joined by '+'")
    caps = [int(m.group(1)) for p in parts if (m := _CAP.match(p))]
    if len(caps) > 1 or any(not 2 <= c <= MAX_CAP_SCALE for c in caps):
        raise ValueError(f"arm {text!r}: at most one capN, with N from 2 to {MAX_CAP_SCALE} (cap16: the "
                         "completion cap x16)")
    try:
        repairs = check_repairs(p for p in parts if not _CAP.match(p))
    except ValueError as exc:
        raise ValueError(f"arm {text!r}: {exc}, or capN") from None
    return repairs, caps[0] if caps else None


def arm_label(repairs: Sequence[str], cap_scale: int | None) -> str:
    """The canonical name of an arm: sorted repairs, then capN; ``none`` when it changes nothing."""
    parts = sorted(repairs) + ([f"cap{cap_scale}"] if cap_scale else [])
    return "+".join(parts) or NO_ARM
