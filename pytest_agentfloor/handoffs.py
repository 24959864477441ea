"""The public-handoff controller (seed 002): a deterministic program that follows the public
handoffs in returned records and issues the read calls itself.

It sees only what the model sees: the last tool result (its ``next_handoff``), the names and
public parameter schemas of the tools on the menu shown, and the calls already made. It is never
given the case, so it cannot read the hidden program, the gold answer or the grader; the episode
loop (episode.py) plays its calls in turns of their own, which cost no model request.

A handoff is ``{"tool": NAME, "arguments": {...}}`` (the next record to read) or ``{}`` (the chain
ends). :func:`next_step` decides, in this order:

* an ok result without a ``next_handoff`` key: nothing to follow (``absent``);
* ``{}`` or null: the chain ends (``empty``);
* anything but an object with a string ``tool`` and an object of ``arguments``; a tool that is not
  on the menu or not a read tool; arguments that do not fit the tool's public parameters:
  ``invalid`` (the controller never guesses, and never changes state: submissions stay the model's);
* a call already made with the same arguments: ``loop``;
* no call left under the call limit: ``limit``;
* otherwise the call. Every stop hands the episode back to the model.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .jsontext import sorted_json

#: tools the controller may call: reads only (the sandbox's public read operations)
READ_TOOLS: frozenset[str] = frozenset({"search_records", "lookup_record", "get_attribute"})
STOPS: tuple[str, ...] = ("absent", "empty", "invalid", "loop", "limit")
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                       "boolean": (bool,), "array": (list,), "object": (dict,)}


@dataclass(frozen=True, slots=True)
class Step:
    """The controller's decision: a call (tool, arguments) to issue, or why it stops."""

    tool: str | None = None
    arguments: dict[str, Any] | None = None
    stop: str | None = None


def call_key(name: str, args: Mapping[str, Any] | None) -> str:
    """A call's identity (tool and arguments in any key order), as the episode loop keys repeats."""
    return f"{name}:{sorted_json(args)}"


def _fits(schema: Mapping[str, Any], args: Mapping[str, Any]) -> bool:
    params = (schema.get("function") or {}).get("parameters") or {}
    props = params.get("properties") or {}
    if any(k not in args for k in params.get("required") or ()) or any(k not in props for k in args):
        return False
    for key, value in args.items():
        want = _TYPES.get(str(props[key].get("type")), ())
        if want and (not isinstance(value, want) or (isinstance(value, bool) and bool not in want)):
            return False
    return True


def next_step(result: Mapping[str, Any], menu: Sequence[Mapping[str, Any]], made: Collection[str],
              calls_left: int | None) -> Step:
    """The controller's next move after `result` (module doc); `made`: call_key of every call so far."""
    if result.get("status") != "ok" or "next_handoff" not in result:
        return Step(stop="absent")
    handoff = result["next_handoff"]
    if handoff is None or handoff == {}:
        return Step(stop="empty")
    if not isinstance(handoff, Mapping) or set(handoff) != {"tool", "arguments"}:
        return Step(stop="invalid")
    tool, args = handoff["tool"], handoff["arguments"]
    schema = next((t for t in menu if (t.get("function") or {}).get("name") == tool), None)
    if not isinstance(tool, str) or tool not in READ_TOOLS or schema is None or not isinstance(args, Mapping) \
            or not _fits(schema, args):
        return Step(stop="invalid")
    if call_key(tool, args) in made:
        return Step(stop="loop")
    if calls_left is not None and calls_left < 1:
        return Step(stop="limit")
    return Step(tool=tool, arguments=dict(args))
