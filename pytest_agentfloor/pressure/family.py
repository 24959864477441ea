"""The task-family file format (``cases/pressure/<intent>.toml``), validated once with pydantic.

A family fixes what defines the correct outcome: the request, the facts (in the subject record),
the decision, the evidence rule (one source at low workflow, two at the medium checkpoint, a chain
of three at high) and the permitted final state (one submission). Everything else is the
compiler's, the public route and handoffs included.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..suite.schema import Record

INTENTS: tuple[str, ...] = ("accounting", "email", "files", "calendar")
_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FamilyRecord(Record):
    """A fixture record with the cases' own fields (suite.schema.Record), frozen like the rest of a family."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Family(_Strict):
    id: str = Field(description="lower-case words joined by '-', unique over cases/pressure/")
    title: str
    request: str = Field(description="the user request; '$cite' is replaced by the evidence rule")
    cite_low: str = Field(description="evidence rule at low workflow: cite the subject record")
    cite_medium: str = Field(description="evidence rule at the medium workflow checkpoint: cite the subject and "
                             "the first source it references")
    cite_high: str = Field(description="evidence rule at high workflow: cite the subject and its two linked sources")
    search: str = Field(description="the query the reference program searches with")
    decisions: list[str] = Field(min_length=2)
    decision: str
    subject: FamilyRecord
    sources: list[FamilyRecord] = Field(min_length=2, max_length=2,
                                        description="the chain: subject -> sources[0] -> sources[1]")
    others: list[FamilyRecord] = Field(default_factory=list, description="records the task does not need")

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError(f"id {v!r}: use lower-case words joined by '-', such as 'overdue-invoice'")
        return v

    @model_validator(mode="after")
    def _coherent(self) -> "Family":
        problems = []
        if self.decision not in self.decisions:
            problems.append(f"decision {self.decision!r} is not one of decisions {self.decisions}")
        if "$cite" not in self.request:
            problems.append("request: needs the '$cite' placeholder for the evidence rule")
        ids = [r.id for r in [self.subject, *self.sources, *self.others]]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            problems.append(f"record ids appear twice: {dup}")
        a, b = self.sources
        if a.id not in _flat_values(self.subject.fields):
            problems.append(f"subject: no field holds the id of sources[0] ({a.id}); the chain starts there")
        if b.id not in _flat_values(a.fields):
            problems.append(f"sources[0]: no field holds the id of sources[1] ({b.id})")
        if not any(isinstance(v, dict) for v in self.subject.fields.values()):
            problems.append("subject: needs a nested object field (the linked encoding turns it into a record)")
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _flat_values(fields: dict[str, Any]) -> set[Any]:
    return {v for v in fields.values() if isinstance(v, str)}


class FamilyFile(_Strict):
    intent: Literal["accounting", "email", "files", "calendar"]
    families: list[Family] = Field(min_length=1)
