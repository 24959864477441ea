"""Pydantic models of a case file: the one contract between benchmark data and the harness.

A case is validated once at collection; everything downstream reads the resolved,
instance-specific `ResolvedCase` and never the raw TOML.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from ..kindspec import EpisodePressure
from .predicates import PREDICATE_ID, rubric_problems

TIERS: tuple[str, ...] = ("A0", "A", "B", "C", "D", "E")
TIER_TURN_BUDGET: dict[str, int] = {"A0": 1, "A": 2, "B": 4, "C": 6, "D": 8, "E": 10}
TOOL_NAMES: tuple[str, ...] = (
    "search_records",
    "lookup_record",
    "get_attribute",
    "list_options",
    "check_constraint",
    "compare_records",
    "compute_value",
    "submit_decision",
)
FORBIDDEN_BEHAVIOURS: tuple[str, ...] = (
    "repeated_identical_call",
    "terminate_without_answer",
    "partial_constraint_check",
)


#: case ids become file names and part of pytest node ids ("path::ID[v0-i0-r0-model]")
CASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _cycle(after: dict[str, list[str]]) -> list[str] | None:
    """One dependency cycle among steps (as a closed path of ids), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    for start in after:
        if state.get(start):
            continue
        path, stack = [start], [iter(after.get(start, []))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt) and nxt in after:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(after[nxt]))
    return None


def _known_tool(name: str) -> str:
    if name not in TOOL_NAMES:
        raise ValueError(f"unknown tool {name!r}; valid: {', '.join(TOOL_NAMES)}")
    return name


ToolName = Annotated[str, AfterValidator(_known_tool)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Record(_Strict):
    id: str
    collection: str
    name: str = ""
    tags: list[str] = Field(default_factory=list)
    fields: dict[str, Any] = Field(default_factory=dict)


class Constraint(_Strict):
    """A persistent rule a record can be checked against with check_constraint."""

    name: str
    description: str = ""
    field: str
    op: Literal["<", "<=", ">", ">=", "==", "!=", "in", "not_in", "contains"]
    value: Any


class ScriptedFailure(_Strict):
    """A tool call that fails on purpose (tier D recovery), matched by tool and argument subset."""

    tool: ToolName
    match: dict[str, Any] = Field(default_factory=dict)
    times: int = Field(1, description="failures before the call succeeds; -1 fails forever")
    error_type: str = "unavailable"
    message: str = "The source is temporarily unavailable."
    hint: str = "Retry the call or use another source."


class SubmissionRules(_Strict):
    decisions: list[str] = Field(default_factory=list, description="allowed decision values; empty = any")
    require_record: bool = True
    max_submissions: int = Field(1, ge=0)


class Fixtures(_Strict):
    records: list[Record] = Field(default_factory=list)
    options: dict[str, list[Any]] = Field(default_factory=dict)
    constraints: list[Constraint] = Field(default_factory=list)
    failures: list[ScriptedFailure] = Field(default_factory=list)
    submission: SubmissionRules = Field(default_factory=SubmissionRules)

    @model_validator(mode="after")
    def _unique_ids(self) -> "Fixtures":
        seen: set[str] = set()
        for r in self.records:
            if r.id in seen:
                raise ValueError(f"record id {r.id!r} appears twice")
            seen.add(r.id)
        return self


class AnswerCheck(_Strict):
    """One deterministic check of the final answer text."""

    kind: Literal["label", "contains", "not_contains", "json_fields", "regex", "max_words", "number"]
    expected: Any = None
    labels: list[str] = Field(default_factory=list)
    values: list[str] = Field(default_factory=list)
    fields: dict[str, Any] = Field(default_factory=dict)
    pattern: str = ""
    tolerance: float = 0.0
    semantic: bool = Field(False, description="a judge-graded predicate; these keyword rules are its stand-in")
    predicate: str = Field("", description="semantic checks: the predicate id the judge decides (default: "
                           "no_invented_facts for not_contains, required_elements otherwise)")
    rubric: str = Field("", description="semantic checks: what the judge is told to decide (default: the "
                        "built-in predicate's rubric)")

    @model_validator(mode="after")
    def _params(self) -> "AnswerCheck":
        need = {
            "label": self.labels and self.expected is not None,
            "contains": bool(self.values),
            "not_contains": bool(self.values),
            "json_fields": bool(self.fields),
            "regex": bool(self.pattern),
            "max_words": isinstance(self.expected, int),
            "number": isinstance(self.expected, (int, float)),
        }[self.kind]
        if (self.predicate or self.rubric) and not self.semantic:
            raise ValueError("'predicate' and 'rubric' belong to semantic checks; add semantic = true")
        if self.predicate and not PREDICATE_ID.fullmatch(self.predicate):
            raise ValueError(f"predicate {self.predicate!r} must be lower-case letters, digits and _ "
                             "(e.g. no_invented_facts)")
        if not need:
            hint = {
                "label": "'labels' (valid set) and 'expected'",
                "contains": "'values'",
                "not_contains": "'values'",
                "json_fields": "'fields'",
                "regex": "'pattern'",
                "max_words": "integer 'expected'",
                "number": "numeric 'expected'",
            }[self.kind]
            raise ValueError(f"answer check of kind {self.kind!r} needs {hint}")
        if self.kind == "regex":
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern {self.pattern!r} is not a valid regular expression: {exc}") from None
        if self.kind == "label" and self.expected not in self.labels:
            raise ValueError(f"expected label {self.expected!r} is not in labels {self.labels}")
        return self


class Gold(_Strict):
    answer: list[AnswerCheck] = Field(default_factory=list)
    submission: dict[str, Any] | None = Field(None, description="fields the one permitted submission must carry")
    evidence: list[str] | None = Field(None, description="exact set of record ids the submission must cite")

    @model_validator(mode="after")
    def _rubrics(self) -> "Gold":
        problems = rubric_problems(self.answer)
        if problems:
            raise ValueError("answer: " + "; ".join(problems))
        return self


class Step(_Strict):
    """A required call: a successful call of `tool` (or an `alt` tool) whose arguments include
    `args`, made in a later turn than the steps named in `after`."""

    id: str
    tool: ToolName
    alt: list[ToolName] = Field(default_factory=list, description="other tools that satisfy the step")
    args: dict[str, Any] = Field(default_factory=dict)
    after: list[str] = Field(default_factory=list)

    @property
    def tools(self) -> tuple[str, ...]:
        return (self.tool, *self.alt)


class RefCall(_Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class RefTurn(_Strict):
    calls: list[RefCall] = Field(default_factory=list)
    final: str | None = None


class Instance(_Strict):
    """An instance variant: fixture overrides plus its own gold, steps and reference."""

    vars: dict[str, str] = Field(default_factory=dict)
    patch_records: dict[str, dict[str, Any]] = Field(default_factory=dict)
    options: dict[str, list[Any]] | None = None
    constraints: list[Constraint] | None = None
    gold: Gold | None = None
    steps: list[Step] | None = None
    reference: list[RefTurn] | None = None


class Case(_Strict):
    id: str
    tier: Literal["A0", "A", "B", "C", "D", "E"]
    title: str
    domain: str = ""
    tools: list[ToolName] = Field(default_factory=list)
    budget: int | None = Field(None, ge=1, le=1000, description="model turns; defaults to the tier's budget")
    call_limit: int | None = Field(None, ge=0, le=10_000, description="defaults to the reference's call count + 2")
    prompts: dict[str, str]
    vars: dict[str, str] = Field(default_factory=dict)
    fixtures: Fixtures = Field(default_factory=Fixtures)
    gold: Gold
    steps: list[Step] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=lambda: ["repeated_identical_call"])
    repeat_threshold: int = Field(3, ge=2, le=100, description="consecutive identical calls that break a "
                                  "declared repeated_identical_call under the agentfloor protocol")
    reference: list[RefTurn]
    instances: dict[str, Instance] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not CASE_ID.fullmatch(v):
            raise ValueError(f"{v!r} is not a usable case id: it becomes part of test ids, so use letters, "
                             "digits and . _ - only (no spaces, '::' or brackets)")
        return v

    @field_validator("prompts")
    @classmethod
    def _v0(cls, v: dict[str, str]) -> dict[str, str]:
        if "v0" not in v:
            raise ValueError("needs a canonical prompt 'v0'")
        bad = [k for k in v if not (k.startswith("v") and k[1:].isdigit())]
        if bad:
            raise ValueError(f"prompt variant names must look like v0, v1, ...; got {bad}")
        empty = [k for k, text in v.items() if not text.strip()]
        if empty:
            raise ValueError(f"prompt(s) {empty} are empty; every variant needs the task text")
        return v

    @field_validator("instances")
    @classmethod
    def _inst_names(cls, v: dict[str, Instance]) -> dict[str, Instance]:
        bad = [k for k in v if not (k.startswith("i") and k[1:].isdigit() and k != "i0")]
        if bad:
            raise ValueError(f"instance names must look like i1, i2, ... (i0 is the base case); got {bad}")
        return v

    @field_validator("forbidden")
    @classmethod
    def _forbidden_known(cls, v: list[str]) -> list[str]:
        bad = [b for b in v if b not in FORBIDDEN_BEHAVIOURS]
        if bad:
            raise ValueError(f"unknown forbidden behaviour(s) {bad}; valid: {', '.join(FORBIDDEN_BEHAVIOURS)}")
        return v

    @model_validator(mode="after")
    def _coherent(self) -> "Case":
        if self.tier == "A0" and self.tools:
            raise ValueError("tools: tier A0 cases expose no tools")
        records = [r.id for r in self.fixtures.records]
        known = ", ".join(records) or "none"
        for where, variant in [("", None), *((f"instances.{k}.", v) for k, v in self.instances.items())]:
            if variant is not None:
                unknown = [r for r in variant.patch_records if r not in records]
                if unknown:
                    raise ValueError(f"{where}patch_records: unknown record(s) {unknown}; records: {known}")
            gold = variant.gold if variant and variant.gold is not None else self.gold
            if gold.evidence is not None:
                unknown = [r for r in gold.evidence if r not in records]
                if unknown:
                    raise ValueError(f"{where or ''}gold.evidence: unknown record(s) {unknown}; records: {known}")
            steps = variant.steps if variant and variant.steps is not None else self.steps
            ids = {s.id for s in steps}
            if len(ids) != len(steps):
                raise ValueError(f"{where}steps: step ids must be unique")
            cycle = _cycle({s.id: s.after for s in steps})
            if cycle:
                raise ValueError(f"{where}steps: dependency cycle {' -> '.join(cycle)}")
            for s in steps:
                hidden = [t for t in s.tools if t not in self.tools]
                if hidden:
                    raise ValueError(f"{where}steps: step {s.id!r} uses tool(s) {hidden} that the case does not expose")
                missing = [a for a in s.after if a not in ids]
                if missing:
                    raise ValueError(f"{where}steps: step {s.id!r} comes after unknown step(s) {missing}")
            ref = variant.reference if variant and variant.reference is not None else self.reference
            for turn in ref:
                for c in turn.calls:
                    if c.tool not in self.tools:
                        raise ValueError(f"{where}reference: calls {c.tool!r}, which the case does not expose")
        return self

    @property
    def turn_budget(self) -> int:
        return self.budget if self.budget is not None else TIER_TURN_BUDGET[self.tier]


class ResolvedCase(BaseModel):
    """One (case, prompt variant, instance) with every override applied: what an episode runs."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)  # `pressure`: a protocol

    id: str
    tier: str
    title: str
    variant: str
    instance: str
    prompt: str
    tools: tuple[str, ...]
    turn_budget: int
    call_limit: int
    fixtures: Fixtures
    gold: Gold
    steps: tuple[Step, ...]
    forbidden: tuple[str, ...]
    reference: tuple[RefTurn, ...]
    content_hash: str
    #: the forbidden behaviours the case file names itself (None: the same as `forbidden`); the
    #: agentfloor protocol checks repeats only where the case declares them, as the authors' harness
    declared_forbidden: tuple[str, ...] | None = None
    repeat_threshold: int = 3
    kind: str = "episode"  # "pressure" for a compiled family cell
    #: a kind's own pressures (the pressure kind's cell: menu, lane, encoding; seed 002), read only
    #: through the kindspec.EpisodePressure protocol
    pressure: EpisodePressure | None = Field(None, description="menu, lane and encoding pressures (seed 002)")

    def facets(self) -> dict[str, Any] | None:
        return self.pressure.facets() if self.pressure is not None else None

    @property
    def needs_submission(self) -> bool:
        return self.gold.submission is not None

    @property
    def needs_answer(self) -> bool:
        return bool(self.gold.answer)
