"""The deterministic sandbox: eight tools over a case's in-memory fixture database.

A `Sandbox` is created fresh for every episode. Tool functions never execute model output:
arguments are validated against the schema, then read as plain data.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

from ..matching import equal, subset
from ..memo import PerObject
from ..suite.schema import Fixtures, Record
from .schemas import validate_arguments

Envelope = dict[str, Any]
_TOKEN = re.compile(r"[a-z0-9]+")


def ok(data: Any) -> Envelope:
    return {"status": "ok", "data": data}


def not_found(message: str, hint: str = "") -> Envelope:
    return {"status": "not_found", "error_type": "not_found", "message": message, "hint": hint}


def error(error_type: str, message: str, hint: str = "") -> Envelope:
    return {"status": "error", "error_type": error_type, "message": message, "hint": hint}


def _echo(text: str, limit: int = 120) -> str:
    """A model-supplied value quoted back in an error, clipped so a huge argument is not echoed."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.casefold()))


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _clean(x: float) -> float | int:
    x = round(x, 6)
    return int(x) if abs(x) < 1e15 and x == int(x) else x


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: equal(b, a),
    "!=": lambda a, b: not equal(b, a),
    "in": lambda a, b: any(equal(x, a) for x in b),
    "not_in": lambda a, b: not any(equal(x, a) for x in b),
    "contains": lambda a, b: any(equal(b, x) for x in a) if isinstance(a, list) else str(b).casefold() in str(a).casefold(),
}


Lookups = tuple[dict[str, Record], dict[str, set[str]], list[str], dict[str, Any]]


def _tables(fixtures: Fixtures) -> Lookups:
    """The sandbox's tables over `fixtures` (records by id, search tokens, collections, constraints)."""
    return ({r.id: r for r in fixtures.records},
            {r.id: _tokens(" ".join([r.id, r.name, r.collection, *r.tags])) for r in fixtures.records},
            sorted({r.collection for r in fixtures.records}),
            {c.name: c for c in fixtures.constraints})


#: read-only tables, built once per fixture set and not per episode (every run of a case plays the same
#: fixtures); lists replaced or grown since make them anew
_lookups = PerObject(_tables, state=lambda f: (id(f.records), len(f.records), id(f.constraints), len(f.constraints)))


class Sandbox:
    """Fresh per episode. `submissions` is the only state a tool can change."""

    def __init__(self, fixtures: Fixtures, tools: tuple[str, ...], *, expected: dict[str, Any] | None = None,
                 feedback: str | None = None):
        """`expected` with `feedback`: a submission that does not carry these fields is rejected with
        an error saying as much as `feedback` allows (expected / field / verdict), and may be retried."""
        self.fixtures = fixtures
        self.tools = tools
        self.expected = expected if feedback else None
        self.feedback = feedback
        self.records, self._index, self._collections, self._constraints = _lookups(fixtures)
        self._failures_fired = [0] * len(fixtures.failures)
        self.submissions: list[dict[str, Any]] = []

    # -- dispatch -----------------------------------------------------------------------
    def call(self, name: str, args: dict[str, Any]) -> Envelope:
        if name not in self.tools:
            return error("unknown_tool", f"there is no tool named {_echo(name)}", f"available tools: {', '.join(self.tools)}")
        problem = validate_arguments(name, args)
        if problem:
            return error("invalid_arguments", f"{name}: {problem}", "check the tool's parameter schema")
        for i, f in enumerate(self.fixtures.failures):
            if f.tool == name and subset(f.match, args) and (f.times < 0 or self._failures_fired[i] < f.times):
                self._failures_fired[i] += 1
                return error(f.error_type, f.message, f.hint)
        try:
            return getattr(self, f"_t_{name}")(**args)
        except (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError) as exc:
            # a tool never lets model input crash the episode: the model gets an error to recover from
            return error("tool_error", f"{name} could not process these arguments ({type(exc).__name__})",
                         "check the argument values")

    def _record(self, record_id: str) -> Record | None:
        rec = self.records.get(record_id.strip())
        if rec is None:  # tolerate case noise in ids, never fuzzy matches
            folded = record_id.strip().casefold()
            rec = next((r for k, r in self.records.items() if k.casefold() == folded), None)
        return rec

    def _missing(self, record_id: str) -> Envelope:
        return not_found(f"no record with id {_echo(record_id)}", "use search_records to find record ids")

    def _reject(self, payload: dict[str, Any]) -> Envelope | None:
        """The validator's error for a submission that does not match the expected fields, or None."""
        assert self.expected is not None
        for key, want in self.expected.items():
            got = payload.get(key)
            if equal(want, got):
                continue
            if self.feedback == "expected":  # the authors' harness: names the field and its expected value
                message = f"{key} mismatch: expected {want!r}, got {got!r}"
            elif self.feedback == "field":
                message = f"{key} is not correct for this task"
            else:
                message = "the submission was not accepted"
            return error("submission_rejected", message, "check the task and submit again")
        return None

    # -- the eight tools ----------------------------------------------------------------
    def _t_search_records(self, query: str, collection: str | None = None) -> Envelope:
        pool = self.fixtures.records
        if collection:
            wanted = collection.strip().casefold()
            pool = [r for r in pool if r.collection.casefold() == wanted]
            if not pool:
                return not_found(f"no collection named {_echo(collection)}", f"collections: {', '.join(self._collections)}")
        q = _tokens(query)
        scored = sorted(((len(q & self._index[r.id]), r.id) for r in pool), key=lambda s: (-s[0], s[1]))
        hits = [self.records[rid] for score, rid in scored if score > 0][:5]
        if not hits:
            return not_found(f"no records match {_echo(query)}", "try fewer or different keywords")
        return ok([{"id": r.id, "name": r.name, "collection": r.collection} for r in hits])

    def _t_lookup_record(self, record_id: str) -> Envelope:
        rec = self._record(record_id)
        if rec is None:
            return self._missing(record_id)
        return ok({"id": rec.id, "collection": rec.collection, "name": rec.name, **rec.fields})

    def _t_get_attribute(self, record_id: str, attribute: str) -> Envelope:
        rec = self._record(record_id)
        if rec is None:
            return self._missing(record_id)
        if attribute not in rec.fields:
            return not_found(f"record {rec.id} has no attribute {_echo(attribute)}", f"attributes: {', '.join(rec.fields)}")
        return ok({"record_id": rec.id, "attribute": attribute, "value": rec.fields[attribute]})

    def _t_list_options(self, category: str) -> Envelope:
        opts = self.fixtures.options
        key = next((k for k in opts if k.casefold() == category.strip().casefold()), None)
        if key is None:
            return not_found(f"no option category {_echo(category)}", f"categories: {', '.join(opts)}")
        return ok({"category": key, "options": opts[key]})

    def _t_check_constraint(self, record_id: str, constraint: str) -> Envelope:
        rec = self._record(record_id)
        if rec is None:
            return self._missing(record_id)
        con = self._constraints.get(constraint.strip())
        if con is None:
            return not_found(f"no constraint named {_echo(constraint)}", f"constraints: {', '.join(self._constraints)}")
        if con.field not in rec.fields:
            return error("not_applicable", f"constraint {con.name} reads {con.field!r}, which {rec.id} lacks")
        actual = rec.fields[con.field]
        try:
            satisfied = bool(_OPS[con.op](actual, con.value))
        except TypeError:
            satisfied = False
        return ok({"record_id": rec.id, "constraint": con.name, "satisfied": satisfied,
                   "detail": f"{con.field} = {actual!r}; rule: {con.field} {con.op} {con.value!r}"})

    def _t_compare_records(self, record_ids: list[str], attribute: str) -> Envelope:
        if len(record_ids) < 2:
            return error("invalid_arguments", "compare_records needs at least two record ids")
        values: dict[str, float] = {}
        for rid in record_ids:
            rec = self._record(rid)
            if rec is None:
                return self._missing(rid)
            num = _as_number(rec.fields.get(attribute))
            if num is None:
                return error("not_numeric", f"{rec.id}.{attribute} is missing or not a number")
            values[rec.id] = num
        hi = max(values, key=lambda k: (values[k], k))
        lo = min(values, key=lambda k: (values[k], k))
        return ok({"attribute": attribute, "values": values, "highest": hi, "lowest": lo})

    def _t_compute_value(self, operation: str, operands: list[float]) -> Envelope:
        xs = [float(x) for x in operands]
        if not all(math.isfinite(x) for x in xs):
            return error("invalid_arguments", "operands must be finite numbers")
        if not xs:
            return error("invalid_arguments", "operands must not be empty")
        if operation in ("difference", "ratio", "percent_change") and len(xs) != 2:
            return error("invalid_arguments", f"{operation} takes exactly two operands")
        if operation in ("ratio", "percent_change") and xs[0 if operation == "percent_change" else 1] == 0:
            return error("division_by_zero", "the divisor is zero")
        result = {
            "sum": lambda: sum(xs),
            "difference": lambda: xs[0] - xs[1],
            "product": lambda: math.prod(xs),
            "ratio": lambda: xs[0] / xs[1],
            "mean": lambda: sum(xs) / len(xs),
            "min": lambda: min(xs),
            "max": lambda: max(xs),
            "percent_change": lambda: (xs[1] - xs[0]) / xs[0] * 100.0,
        }[operation]()
        if not math.isfinite(result):
            return error("overflow", f"the result of {operation} overflows", "use smaller operands")
        return ok({"operation": operation, "result": _clean(result)})

    def _t_submit_decision(self, decision: str, record_id: str | None = None,
                           evidence: list[str] | None = None, note: str | None = None) -> Envelope:
        rules = self.fixtures.submission
        if len(self.submissions) >= rules.max_submissions:
            return error("already_submitted", "a decision was already recorded", "do not submit again")
        if rules.decisions and not any(equal(d, decision) for d in rules.decisions):
            return error("invalid_decision", f"decision {_echo(decision)} is not allowed",
                         f"allowed decisions: {', '.join(rules.decisions)}")
        rec = None
        if record_id is not None:
            rec = self._record(record_id)
            if rec is None:
                return self._missing(record_id)
        elif rules.require_record:
            return error("invalid_arguments", "record_id is required for this decision")
        cited = []
        for rid in evidence or []:
            erec = self._record(rid)
            if erec is None:
                return self._missing(rid)
            cited.append(erec.id)
        payload = {"decision": decision, "record_id": rec.id if rec else None, "evidence": cited, "note": note or ""}
        if self.expected is not None:
            rejected = self._reject(payload)
            if rejected is not None:
                return rejected
        self.submissions.append(payload)
        return ok({"recorded": True, "decision": decision, "record_id": payload["record_id"]})
