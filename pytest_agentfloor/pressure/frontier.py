"""The workflow frontier (seed 002): families built to be followed for 2, 6, 14 and 30 calls.

A frontier family is a chain of records that ends at one closing record holding the facts that
decide it. The request gives the id of the chain's first record; every record of the chain returns
a public ``next_handoff`` naming the next one, and the closing record an empty one. A cell of k
calls is a chain of k - 1 reads and one submission; records are named by their distance to the
closing record, so every cell shares the closing record (its id, facts, decision and evidence) and
the handoff of each record, and only the start, and so the chain's length, differs.

Each record carries about 2,000 characters of posting lines, so the transcript a model re-reads
grows with every call: under the tbb protocol's 128,000-token episode budget a model-run loop that
reads the whole 30-call chain meets the budget before the call limit (about 22 requests, counted
as the scripted policies count; a real tokenizer counts more), while 14 calls stay well within it.
The public-handoff controller, which issues the reads without model requests, is what the 30-call
cell is for. The menu is the V=8 menu of the family (fixed lane), the records raw.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..suite.schema import Fixtures, Gold, Record, RefCall, RefTurn, ResolvedCase, Step, SubmissionRules
from .cell import PressureCell
from .family import FamilyRecord
from .menu import draw

FRONTIER_CALLS: tuple[int, ...] = (2, 6, 14, 30)
FRONTIER_V = 8
_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
OPERATIONAL: tuple[str, ...] = ("search_records", "lookup_record", "get_attribute", "submit_decision")
_WORDS = ("accrual", "reversal", "freight", "licence", "consulting", "rebate", "deposit", "retainer", "warranty",
          "catering", "hosting", "subscription", "insurance", "maintenance", "utilities", "translation",
          "courier", "stationery", "training", "audit", "valuation", "escrow", "royalty", "storage")
_ACCOUNTS = ("4000-revenue", "4100-services", "5000-cogs", "6100-office", "6200-travel", "6300-software",
             "6400-facilities", "6500-marketing", "7100-payroll", "2100-payables", "1200-receivables")


class FrontierFamily(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="lower-case words joined by '-', unique over cases/pressure/")
    intent: Literal["accounting", "email", "files", "calendar"]
    title: str
    request: str = Field(description="the user request; '$start' is replaced by the id of the chain's first record")
    decisions: list[str] = Field(min_length=2)
    decision: str
    collection: str = Field(description="the collection of the chain's records")
    step_name: str = Field(description="a chain record's name; '{n}' is its distance to the closing record")
    final: FamilyRecord = Field(description="the closing record: its fields decide the family")
    others: list[FamilyRecord] = Field(default_factory=list, description="records the task does not need")

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError(f"id {v!r}: use lower-case words joined by '-', such as 'close-trail'")
        return v

    @model_validator(mode="after")
    def _coherent(self) -> "FrontierFamily":
        problems = []
        if self.decision not in self.decisions:
            problems.append(f"decision {self.decision!r} is not one of decisions {self.decisions}")
        if "$start" not in self.request:
            problems.append("request: needs the '$start' placeholder for the chain's first record")
        if "{n}" not in self.step_name:
            problems.append("step_name: needs '{n}' (the record's distance to the closing record)")
        ids = [self.final.id, *(r.id for r in self.others)]
        if len(set(ids)) != len(ids):
            problems.append("record ids appear twice")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class FrontierFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    frontier: list[FrontierFamily] = Field(min_length=1)


def _opaque(*parts: str) -> str:
    h = hashlib.sha256("|".join(parts).encode()).hexdigest().upper()
    return f"{'QXKZWMPR'[int(h[0], 16) % 8]}{h[1:4]}-{h[4:8]}"


def chain_id(family: str, distance: int) -> str:
    """The id of the chain record `distance` reads before the closing record."""
    return _opaque("frontier", family, str(distance))


def _lines(family: str, rid: str) -> list[dict[str, Any]]:
    """About 2,000 characters of posting lines: what makes a long transcript long."""
    rng = random.Random(int(hashlib.sha256(f"lines|{family}|{rid}".encode()).hexdigest()[:16], 16))
    out = []
    for n in range(1, 11):
        words = " ".join(rng.choice(_WORDS) for _ in range(6))
        out.append({"line": n, "account": rng.choice(_ACCOUNTS), "amount": round(rng.uniform(20, 9000), 2),
                    "cost_centre": f"CC-{rng.randint(100, 999)}", "memo": f"{words} ({rng.randint(1000, 9999)})"})
    return out


def _chain_record(fam: FrontierFamily, distance: int) -> Record:
    rid = chain_id(fam.id, distance)
    return Record(id=rid, collection=fam.collection, name=fam.step_name.replace("{n}", str(distance)),
                  fields={"status": "posted", "lines": _lines(fam.id, rid)})


def frontier_case(fam: FrontierFamily, calls: int, content_hash: str) -> ResolvedCase:
    """The frontier cell of `calls` calls (`calls` - 1 reads along the chain, then the submission)."""
    from .compiler import publish
    from .routes import family_route

    if calls not in FRONTIER_CALLS:
        raise ValueError(f"frontier cell of {calls} calls: valid are {', '.join(map(str, FRONTIER_CALLS))}")
    final = Record(id=fam.final.id, collection=fam.final.collection, name=fam.final.name, tags=list(fam.final.tags),
                   fields={**fam.final.fields, "lines": _lines(fam.id, fam.final.id)})
    chain = [_chain_record(fam, d) for d in range(calls - 2, 0, -1)]  # the start first
    order = [*chain, final]
    steps, ref = [], []
    for n, rec in enumerate(order):
        steps.append(Step(id=f"read{n}", tool="lookup_record", alt=["get_attribute"], args={"record_id": rec.id},
                          after=[f"read{n - 1}"] if n else []))
        ref.append(RefTurn(calls=[RefCall(tool="lookup_record", args={"record_id": rec.id})]))
    steps.append(Step(id="decide", tool="submit_decision", args={"record_id": final.id}, after=[f"read{len(order) - 1}"]))
    ref.append(RefTurn(calls=[RefCall(tool="submit_decision", args={
        "decision": fam.decision, "record_id": final.id, "evidence": [final.id]})]))
    others = [Record(id=r.id, collection=r.collection, name=r.name, tags=list(r.tags), fields=dict(r.fields))
              for r in fam.others]
    shown, offered = draw(fam.id, OPERATIONAL, FRONTIER_V)
    cell = PressureCell(family=fam.id, intent=fam.intent, size=FRONTIER_V, workflow=None, encoding="raw",
                        lane="fixed", menu=shown, offered=offered, calls=calls)
    case = ResolvedCase(
        id=fam.id, tier="P", title=fam.title, variant=f"calls{calls}", instance="fixed",
        prompt=fam.request.replace("$start", order[0].id), tools=OPERATIONAL, turn_budget=calls + 4,
        call_limit=calls + 2,
        fixtures=Fixtures(records=[*order, *others], submission=SubmissionRules(decisions=list(fam.decisions))),
        gold=Gold(submission={"decision": fam.decision, "record_id": final.id}, evidence=[final.id]),
        steps=tuple(steps), forbidden=("repeated_identical_call",), reference=tuple(ref),
        content_hash=content_hash, kind="pressure", pressure=cell)
    return publish(case, family_route(fam.id, fam.intent, fam.collection), order[0].id)
