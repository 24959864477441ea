"""Returned-record encodings (pressure D): raw, compact, typed, linked.

raw, compact and typed re-encode the same tool result at delivery; the grader keeps reading the
raw result, so the facts and cited ids are identical across encodings. linked is a change of the
stored records (nested objects become records of their own, reached by a further lookup), made
by the compiler; its delivery is raw.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

ENCODINGS: tuple[str, ...] = ("raw", "compact", "typed", "linked")


def _keys(node: Any, out: dict[str, None]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            out.setdefault(k, None)
            _keys(v, out)
    elif isinstance(node, list):
        for v in node:
            _keys(v, out)


def _short(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26]


def _rename(node: Any, table: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {table[k]: _rename(v, table) for k, v in node.items()}
    if isinstance(node, list):
        return [_rename(v, table) for v in node]
    return node


def _typed(node: Any) -> Any:
    if isinstance(node, dict):
        return {"type": "object", "fields": {k: _typed(v) for k, v in node.items()}}
    if isinstance(node, list):
        return {"type": "list", "items": [_typed(v) for v in node]}
    kind = ("null" if node is None else "boolean" if isinstance(node, bool) else "integer" if isinstance(node, int)
            else "number" if isinstance(node, float) else "string")
    return {"type": kind, "value": node}


def _outside(result: dict[str, Any]) -> dict[str, Any]:
    """The envelope's other blocks (the public handoff): delivered as they are under every encoding."""
    return {k: v for k, v in result.items() if k not in ("status", "data")}


def deliver(result: dict[str, Any], encoding: str) -> str:
    """The tool message the model reads for `result` under `encoding` (only the data block is re-encoded)."""
    if encoding in ("raw", "linked") or result.get("status") != "ok" or "data" not in result:
        return json.dumps(result, sort_keys=True)
    data = result["data"]
    if encoding == "compact":
        names: dict[str, None] = {}
        _keys(data, names)
        table = {k: _short(i) for i, k in enumerate(names)}
        body = {"status": "ok", "keys": {v: k for k, v in table.items()}, "data": _rename(data, table),
                **_outside(result)}
        return json.dumps(body, separators=(",", ":"))
    if encoding == "typed":
        return json.dumps({"status": "ok", "data": _typed(data), **_outside(result)}, sort_keys=True)
    raise ValueError(f"unknown encoding {encoding!r}; valid: {', '.join(ENCODINGS)}")


def decode(content: str, encoding: str) -> Any:
    """Inverse of :func:`deliver` (used by the audit: every encoding carries the same facts)."""
    body = json.loads(content)
    if encoding in ("raw", "linked") or "data" not in body:
        return body
    if encoding == "compact":
        table = body["keys"]

        def back(node: Any) -> Any:
            if isinstance(node, dict):
                return {table[k]: back(v) for k, v in node.items()}
            if isinstance(node, list):
                return [back(v) for v in node]
            return node
        return {"status": "ok", "data": back(body["data"]),
                **{k: v for k, v in body.items() if k not in ("status", "keys", "data")}}

    def untype(node: Any) -> Any:
        if node["type"] == "object":
            return {k: untype(v) for k, v in node["fields"].items()}
        if node["type"] == "list":
            return [untype(v) for v in node["items"]]
        return node["value"]
    return {"status": "ok", "data": untype(body["data"]), **_outside(body)}


def link_id(owner: str, record_id: str, field: str) -> str:
    """An opaque, deterministic id for the record a nested object becomes under `linked`."""
    h = hashlib.sha256(f"{owner}|{record_id}|{field}".encode()).hexdigest().upper()
    return f"L{h[:3]}-{h[3:7]}"
