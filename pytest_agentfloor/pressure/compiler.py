"""The deterministic compiler: a family and a cell (V, W, D, lane) -> a ladder-shaped ResolvedCase.

Matched variants share the decision, the facts, the evidence rule of their W level and the
permitted final state; only the named pressure differs. The same V and D transforms apply to any
ladder case (``--menu``/``--encoding``). The call limit is the certified minimum (the reference
program's length, audited minimal) plus two, the turn budget the call limit plus two.

A family's cells also carry the public coordinates the repairs read (seed 002): the request names
the route of the family's connector and the read tools declare it (pressure/routes.py), and every
record of the reference program's chain, from the subject on, returns a public ``next_handoff``
naming the next record to read (``{}`` on the last one). Both are derived here from the family and
its reference program; the router and the controller read only the request, the menu and the
returned records, never the program itself.
"""

from __future__ import annotations

from typing import Any

from ..suite.schema import Fixtures, Gold, Record, RefCall, RefTurn, ResolvedCase, Step, SubmissionRules
from .cell import PressureCell
from .encoding import ENCODINGS, link_id
from .family import Family
from .menu import LANES, MENU_SIZES, draw

WORKFLOWS: tuple[str, ...] = ("low", "high")
#: the medium workflow (two cited records) is a checkpoint cell of the design, not a factorial level
CHECKPOINTS: tuple[tuple[int, str, str], ...] = ((8, "medium", "raw"),)
#: bumped when compiled cells change for unchanged family files (a suffix of their case_hash), so
#: --agentfloor-resume and the gate never pair runs of two compilers: 2 = routes, handoffs, medium
COMPILER_VERSION = 2
OPERATIONAL: tuple[str, ...] = ("search_records", "lookup_record", "get_attribute", "submit_decision")
_READERS = frozenset({"lookup_record", "get_attribute"})

__all__ = ["CHECKPOINTS", "ENCODINGS", "LANES", "MENU_SIZES", "WORKFLOWS", "all_cells", "apply_pressure", "base_case",
           "cells", "compile_cell", "handoff_chain"]


def cells() -> list[tuple[int, str, str]]:
    """The 24 factorial cells (V, W, D) in item order."""
    return [(v, w, d) for v in MENU_SIZES for w in WORKFLOWS for d in ENCODINGS]


def all_cells() -> list[tuple[int, str, str]]:
    """The factorial cells, then the checkpoint cells that are not in it."""
    return cells() + [c for c in CHECKPOINTS if c not in cells()]


def cell_name(v: int, w: str, d: str) -> str:
    return f"V{v}-{w}-{d}"


def _record(r: Any) -> Record:
    return Record(id=r.id, collection=r.collection, name=r.name, tags=list(r.tags), fields=dict(r.fields))


def base_case(family: Family, workflow: str, content_hash: str) -> ResolvedCase:
    """The family at workflow `workflow` with its own menu and raw records."""
    s, (a, b) = family.subject.id, family.sources
    depth = {"low": 0, "medium": 1, "high": 2}[workflow]  # sources read beyond the subject
    evidence = [s, a.id, b.id][:1 + depth]
    steps = [Step(id="find", tool="search_records"),
             Step(id="read", tool="lookup_record", alt=["get_attribute"], args={"record_id": s}, after=["find"])]
    ref = [RefTurn(calls=[RefCall(tool="search_records", args={"query": family.search})]),
           RefTurn(calls=[RefCall(tool="lookup_record", args={"record_id": s})])]
    last = "read"
    for n, src in enumerate([a, b][:depth], 1):
        steps.append(Step(id=f"source{n}", tool="lookup_record", alt=["get_attribute"], args={"record_id": src.id},
                          after=[last]))
        ref.append(RefTurn(calls=[RefCall(tool="lookup_record", args={"record_id": src.id})]))
        last = f"source{n}"
    # the step asks for a submission on the subject; what it decides is X's to judge (the final state)
    steps.append(Step(id="decide", tool="submit_decision", args={"record_id": s},
                      after=["read", last] if depth else ["read"]))
    ref.append(RefTurn(calls=[RefCall(tool="submit_decision", args={
        "decision": family.decision, "record_id": s, "evidence": evidence})]))
    calls = sum(len(t.calls) for t in ref)
    fixtures = Fixtures(records=[_record(r) for r in [family.subject, *family.sources, *family.others]],
                        submission=SubmissionRules(decisions=list(family.decisions)))
    return ResolvedCase(
        id=family.id, tier="P", title=family.title, variant=workflow, instance="fixed",
        prompt=family.request.replace("$cite", {"low": family.cite_low, "medium": family.cite_medium,
                                               "high": family.cite_high}[workflow]),
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


def handoff_chain(case: ResolvedCase, start: str) -> tuple[tuple[str, str | None], ...]:
    """The public handoffs of `case`: the records its reference program reads, from `start` on, in
    order, each naming the next (None on the last)."""
    reads = [str(c.args["record_id"]) for t in case.reference for c in t.calls
             if c.tool in _READERS and "record_id" in c.args]
    chain = reads[reads.index(start):] if start in reads else []
    return tuple((rid, chain[n + 1] if n + 1 < len(chain) else None) for n, rid in enumerate(chain))


def publish(case: ResolvedCase, route: tuple[str, str, str], start: str) -> ResolvedCase:
    """`case` with its public coordinates: the route named in the request and declared on the menu,
    and the handoffs of its chain from `start` (module doc)."""
    from .routes import sentence

    assert isinstance(case.pressure, PressureCell)
    cell = case.pressure.model_copy(update={"route": route, "handoffs": handoff_chain(case, start)})
    return case.model_copy(update={"prompt": f"{case.prompt} {sentence(route)}", "pressure": cell})


def compile_cell(family: Family, intent: str, v: int, w: str, d: str, lane: str, content_hash: str) -> ResolvedCase:
    """One family cell, as an episode plays it; `variant` names the cell, `instance` the lane."""
    from .routes import family_route

    if v not in MENU_SIZES or w not in (*WORKFLOWS, "medium"):
        raise ValueError(f"cell V{v}-{w}: V is one of {MENU_SIZES}, W one of {(*WORKFLOWS, 'medium')}")
    case = base_case(family, w, content_hash)
    case = apply_pressure(case, size=v, encoding=d, lane=lane, family=family.id, intent=intent, workflow=w)
    case = publish(case, family_route(family.id, intent, family.subject.collection), family.subject.id)
    return case.model_copy(update={"variant": cell_name(v, w, d), "instance": lane})
