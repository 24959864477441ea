"""The deterministic compiler: a family and a cell (V, W, D, lane) -> a ladder-shaped ResolvedCase.

Matched variants share the decision, the facts, the evidence rule of their W level and the
permitted final state; only the named pressure differs. The same V and D transforms apply to any
ladder case (``--menu``/``--encoding``). The call limit is the certified minimum (the reference
program's length, audited minimal) plus two, the turn budget the call limit plus two.
"""

from __future__ import annotations

from typing import Any

from ..suite.schema import Fixtures, Gold, Record, RefCall, RefTurn, ResolvedCase, Step, SubmissionRules
from .cell import PressureCell
from .encoding import ENCODINGS, link_id
from .family import Family
from .menu import LANES, MENU_SIZES, draw

WORKFLOWS: tuple[str, ...] = ("low", "high")
OPERATIONAL: tuple[str, ...] = ("search_records", "lookup_record", "get_attribute", "submit_decision")
_READERS = frozenset({"lookup_record", "get_attribute"})

__all__ = ["ENCODINGS", "LANES", "MENU_SIZES", "WORKFLOWS", "apply_pressure", "base_case", "cells", "compile_cell"]


def cells() -> list[tuple[int, str, str]]:
    """The 24 cells (V, W, D) in item order."""
    return [(v, w, d) for v in MENU_SIZES for w in WORKFLOWS for d in ENCODINGS]


def cell_name(v: int, w: str, d: str) -> str:
    return f"V{v}-{w}-{d}"


def _record(r: Any) -> Record:
    return Record(id=r.id, collection=r.collection, name=r.name, tags=list(r.tags), fields=dict(r.fields))


def base_case(family: Family, workflow: str, content_hash: str) -> ResolvedCase:
    """The family at workflow `workflow` with its own menu and raw records."""
    s, (a, b) = family.subject.id, family.sources
    high = workflow == "high"
    evidence = [s, a.id, b.id] if high else [s]
    steps = [Step(id="find", tool="search_records"),
             Step(id="read", tool="lookup_record", alt=["get_attribute"], args={"record_id": s}, after=["find"])]
    ref = [RefTurn(calls=[RefCall(tool="search_records", args={"query": family.search})]),
           RefTurn(calls=[RefCall(tool="lookup_record", args={"record_id": s})])]
    if high:
        steps += [Step(id="source1", tool="lookup_record", alt=["get_attribute"], args={"record_id": a.id},
                       after=["read"]),
                  Step(id="source2", tool="lookup_record", alt=["get_attribute"], args={"record_id": b.id},
                       after=["source1"])]
        ref += [RefTurn(calls=[RefCall(tool="lookup_record", args={"record_id": a.id})]),
                RefTurn(calls=[RefCall(tool="lookup_record", args={"record_id": b.id})])]
    # the step asks for a submission on the subject; what it decides is X's to judge (the final state)
    steps.append(Step(id="decide", tool="submit_decision", args={"record_id": s},
                      after=["read", "source2"] if high else ["read"]))
    ref.append(RefTurn(calls=[RefCall(tool="submit_decision", args={
        "decision": family.decision, "record_id": s, "evidence": evidence})]))
    calls = sum(len(t.calls) for t in ref)
    fixtures = Fixtures(records=[_record(r) for r in [family.subject, *family.sources, *family.others]],
                        submission=SubmissionRules(decisions=list(family.decisions)))
    return ResolvedCase(
        id=family.id, tier="P", title=family.title, variant=workflow, instance="fixed",
        prompt=family.request.replace("$cite", family.cite_high if high else family.cite_low),
        tools=OPERATIONAL, turn_budget=calls + 4, call_limit=calls + 2, fixtures=fixtures,
        gold=Gold(submission={"decision": family.decision, "record_id": s}, evidence=evidence),
        steps=tuple(steps), forbidden=("repeated_identical_call",), reference=tuple(ref),
        content_hash=content_hash, kind="pressure")


def link(case: ResolvedCase) -> ResolvedCase:
    """The linked encoding: each nested object becomes a record of its own, left behind as
    ``{"$ref": id}``; every record the program reads must then be followed to its linked records."""
    records: list[Record] = []
    linked: list[Record] = []
    split: dict[str, list[str]] = {}
    for r in case.fixtures.records:
        fields = {}
        for k, v in r.fields.items():
            if isinstance(v, dict):
                lid = link_id(case.id, r.id, k)
                linked.append(Record(id=lid, collection=f"{r.collection}.{k}", fields=dict(v)))
                split.setdefault(r.id, []).append(lid)
                fields[k] = {"$ref": lid}
            else:
                fields[k] = v
        records.append(r.model_copy(update={"fields": fields}) if r.id in split else r)
    if not split:
        return case
    records += linked
    steps: list[Step] = []
    extra_after: dict[str, list[str]] = {}
    for st in case.steps:
        steps.append(st)
        rid = st.args.get("record_id")
        if set(st.tools) <= _READERS and rid in split:
            follows = [f"{st.id}.link{n}" for n in range(len(split[rid]))]
            steps += [Step(id=f, tool="lookup_record", alt=["get_attribute"], args={"record_id": lid}, after=[st.id])
                      for f, lid in zip(follows, split[rid])]
            extra_after[st.id] = follows
    # a step that uses what was read (not merely another read) needs the linked records too
    steps = [s.model_copy(update={"after": s.after + [f for a in s.after for f in extra_after.get(a, [])]})
             if not set(s.tools) <= _READERS and any(a in extra_after for a in s.after) else s for s in steps]
    ref: list[RefTurn] = []
    followed: set[str] = set()
    for turn in case.reference:
        ref.append(turn)
        todo = [lid for c in turn.calls if c.tool in _READERS
                for lid in split.get(str(c.args.get("record_id")), []) if lid not in followed]
        if todo:
            followed.update(todo)
            ref.append(RefTurn(calls=[RefCall(tool="lookup_record", args={"record_id": lid}) for lid in todo]))
    calls = sum(len(t.calls) for t in ref)
    added = calls - sum(len(t.calls) for t in case.reference)
    return case.model_copy(update={
        "fixtures": case.fixtures.model_copy(update={"records": records}), "steps": tuple(steps),
        "reference": tuple(ref), "call_limit": case.call_limit + added, "turn_budget": case.turn_budget + added})


def apply_pressure(case: ResolvedCase, *, size: int | None, encoding: str = "raw", lane: str = "fixed",
                   family: str | None = None, intent: str | None = None, workflow: str | None = None) -> ResolvedCase:
    """`case` under a visible menu of `size` schemas (None: its own tools), an encoding and a lane."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding {encoding!r}: valid are {', '.join(ENCODINGS)}")
    if lane not in LANES:
        raise ValueError(f"lane {lane!r}: valid are {', '.join(LANES)}")
    out = link(case) if encoding == "linked" else case
    fam = family or case.id
    if size is None:
        shown, offered = tuple(case.tools), tuple(case.tools)
    else:
        shown, offered = draw(fam, tuple(case.tools), size)
    cell = PressureCell(family=fam, intent=intent, size=size, workflow=workflow, encoding=encoding, lane=lane,
                        menu=shown, offered=offered)
    return out.model_copy(update={"pressure": cell})


def compile_cell(family: Family, intent: str, v: int, w: str, d: str, lane: str, content_hash: str) -> ResolvedCase:
    """One family cell, as an episode plays it; `variant` names the cell, `instance` the lane."""
    if v not in MENU_SIZES or w not in WORKFLOWS:
        raise ValueError(f"cell V{v}-{w}: V is one of {MENU_SIZES}, W one of {WORKFLOWS}")
    case = base_case(family, w, content_hash)
    case = apply_pressure(case, size=v, encoding=d, lane=lane, family=family.id, intent=intent, workflow=w)
    return case.model_copy(update={"variant": cell_name(v, w, d), "instance": lane})
