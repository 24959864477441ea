"""JSON schemas of the eight tools, as given to the model (OpenAI function format).

Built once at import; the episode hands the same dicts to every request.
"""

from __future__ import annotations

import json
import math
from typing import Any

_S = {"type": "string"}

_TOOLS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "search_records": (
        "Search the record store by keywords. Returns matching record ids with their names.",
        {"query": {**_S, "description": "keywords to match against record names and tags"},
         "collection": {**_S, "description": "optional collection to restrict the search to"}},
        ["query"],
    ),
    "lookup_record": (
        "Fetch one record by its exact id, with all of its fields.",
        {"record_id": {**_S, "description": "the exact record id"}},
        ["record_id"],
    ),
    "get_attribute": (
        "Read one field of a record.",
        {"record_id": {**_S, "description": "the exact record id"},
         "attribute": {**_S, "description": "the field name"}},
        ["record_id", "attribute"],
    ),
    "list_options": (
        "List the valid options of a category (for example allowed values or candidate slots).",
        {"category": {**_S, "description": "the option category"}},
        ["category"],
    ),
    "check_constraint": (
        "Check whether a record satisfies a named constraint. Returns satisfied true or false.",
        {"record_id": {**_S, "description": "the exact record id"},
         "constraint": {**_S, "description": "the constraint name"}},
        ["record_id", "constraint"],
    ),
    "compare_records": (
        "Compare several records on one numeric field; returns each value and the highest and lowest.",
        {"record_ids": {"type": "array", "items": _S, "description": "two or more record ids"},
         "attribute": {**_S, "description": "the field to compare"}},
        ["record_ids", "attribute"],
    ),
    "compute_value": (
        "Compute a number from operands: sum, difference, product, ratio, mean, min, max, percent_change.",
        {"operation": {"type": "string",
                       "enum": ["sum", "difference", "product", "ratio", "mean", "min", "max", "percent_change"]},
         "operands": {"type": "array", "items": {"type": "number"}, "description": "the numbers, in order"}},
        ["operation", "operands"],
    ),
    "submit_decision": (
        "Record the final decision. This is the only action that changes state; call it once.",
        {"decision": {**_S, "description": "the decision"},
         "record_id": {**_S, "description": "the record the decision is about"},
         "evidence": {"type": "array", "items": _S, "description": "ids of the records that support it"},
         "note": {**_S, "description": "optional short justification"}},
        ["decision"],
    ),
}


def _schema(name: str) -> dict[str, Any]:
    desc, props, required = _TOOLS[name]
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": desc,
            "parameters": {"type": "object", "properties": props, "required": required,
                           "additionalProperties": False},
        },
    }


TOOL_SCHEMAS: dict[str, dict[str, Any]] = {name: _schema(name) for name in _TOOLS}
_MENU_CACHE: dict[tuple[str, ...], list[dict[str, Any]]] = {}


def menu(tools: tuple[str, ...]) -> list[dict[str, Any]]:
    """The tool list for a case, shared between items (callers must not mutate it)."""
    if tools not in _MENU_CACHE:
        _MENU_CACHE[tools] = [TOOL_SCHEMAS[t] for t in tools]
    return _MENU_CACHE[tools]


def _finite(v: int | float) -> bool:
    try:
        return math.isfinite(v)
    except OverflowError:  # an int too large for a float
        return False


def validate_arguments(name: str, args: dict[str, Any]) -> str | None:
    """Strict validation against the schema; returns a problem or None."""
    _, props, required = _TOOLS[name]
    missing = [r for r in required if r not in args]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    extra = [k for k in args if k not in props]
    if extra:
        return f"unknown argument(s): {', '.join(extra)}; allowed: {', '.join(props)}"
    for key, value in args.items():
        spec = props[key]
        typ = spec["type"]
        if typ == "string" and not isinstance(value, str):
            return f"argument {key!r} must be a string"
        if typ == "string" and "enum" in spec and value not in spec["enum"]:
            return f"argument {key!r} must be one of {', '.join(spec['enum'])}"
        if typ == "array":
            if not isinstance(value, list):
                return f"argument {key!r} must be an array"
            item_t = spec["items"]["type"]
            for v in value:
                if item_t == "string" and not isinstance(v, str):
                    return f"argument {key!r} must be an array of strings"
                if item_t == "number" and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    return f"argument {key!r} must be an array of numbers"
                if item_t == "number" and not _finite(v):
                    return f"argument {key!r} must hold finite numbers within +-1e308"
    return None


#: deepest nesting of arguments a tool call may carry; the schemas need three levels
MAX_ARGUMENT_DEPTH = 32
#: longest integer literal read from a tool call (Python refuses more than 4300 digits anyway)
MAX_INT_DIGITS = 400


class HostileArguments(ValueError):
    """Valid JSON the sandbox will not read: NaN/Infinity, huge numbers, absurd nesting."""


def _reject_constant(name: str) -> Any:
    raise HostileArguments(f"{name} is not a number the tools accept")


def _read_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise HostileArguments(f"an integer with {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _read_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise HostileArguments(f"the number {text[:40]}{'...' if len(text) > 40 else ''} overflows")
    return value


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_ARGUMENT_DEPTH:
            break
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return deepest


#: the strict reader of argument text, made once (json.loads with hooks builds a decoder per call)
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_read_int, parse_float=_read_float)


def parse_arguments(raw: str) -> Any:
    """The model's argument text as JSON data; never runs or resolves anything in it.

    Raises json.JSONDecodeError for text that is not JSON (a malformed call) and
    HostileArguments for valid JSON the sandbox refuses to read.
    """
    if not raw.strip():
        return {}
    try:
        value = _DECODER.decode(raw)
    except RecursionError:
        raise HostileArguments(f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels") from None
    except json.JSONDecodeError:
        raise
    except HostileArguments:
        raise
    except ValueError as exc:  # any other limit of the decoder
        raise HostileArguments(f"arguments cannot be read: {str(exc)[:80]}") from None
    if _depth(value) > MAX_ARGUMENT_DEPTH:
        raise HostileArguments(f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels")
    return value
