"""The semantic predicates: ids, rubrics, and which answer checks stand in for each.

A case marks an answer check `semantic = true` when its keyword rule only approximates a
judgement about meaning (seed 000 routes A02/A03/A05's invented facts through an LLM judge).
Checks are grouped by predicate id, and each group gets one verdict: from the judge under
`--judge`, else from its keyword rules (the stand-in). Pure data and functions: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .schema import AnswerCheck, ResolvedCase

#: our own rubrics; changing one changes the cache key of every verdict that used it
BUILTIN_RUBRICS: dict[str, str] = {
    "required_elements": (
        "The answer gives every piece of information the task asks for (wording may differ), and each "
        "piece it gives agrees with the material in the task."),
    "no_invented_facts": (
        "The answer states nothing that the material in the task does not say or directly imply: no "
        "added cause, name, number, date, place, instruction or event. Leaving details out, shortening "
        "and rewording are not violations."),
    "only_requested_items": (
        "The answer contains only the items the task asks for and nothing the task says to leave out."),
}

PREDICATE_ID = re.compile(r"[a-z][a-z0-9_]{0,63}")


def default_predicate(kind: str) -> str:
    """A keyword check that forbids words stands in for 'no invented facts'; the rest for required content."""
    return "no_invented_facts" if kind == "not_contains" else "required_elements"


def predicate_of(check: "AnswerCheck") -> str:
    return check.predicate or default_predicate(check.kind)


@dataclass(frozen=True)
class SemanticGroup:
    """One predicate of a case: its id, its rubric and the keyword checks that stand in for it."""

    predicate: str
    rubric: str
    checks: tuple["AnswerCheck", ...]


def semantic_groups(case: "ResolvedCase") -> list[SemanticGroup]:
    """The case's semantic predicates in the order their first check appears."""
    order: dict[str, list["AnswerCheck"]] = {}
    answers = getattr(getattr(case, "gold", None), "answer", None) or []  # other case kinds have none
    for check in answers:
        if check.semantic:
            order.setdefault(predicate_of(check), []).append(check)
    out = []
    for pid, checks in order.items():
        rubric = next((c.rubric for c in checks if c.rubric), "") or BUILTIN_RUBRICS.get(pid, "")
        out.append(SemanticGroup(pid, " ".join(rubric.split()), tuple(checks)))
    return out


def rubric_problems(checks: list["AnswerCheck"]) -> list[str]:
    """Case-file problems: a custom predicate without a rubric, or one predicate with two rubrics."""
    problems = []
    rubrics: dict[str, set[str]] = {}
    for c in checks:
        if not c.semantic:
            continue
        pid = predicate_of(c)
        if c.rubric:
            rubrics.setdefault(pid, set()).add(" ".join(c.rubric.split()))
        elif pid not in BUILTIN_RUBRICS and pid not in rubrics:
            rubrics.setdefault(pid, set())
    for pid, found in rubrics.items():
        if not found and pid not in BUILTIN_RUBRICS:
            problems.append(f"predicate {pid!r} is not built in ({', '.join(BUILTIN_RUBRICS)}): give its 'rubric'")
        if len(found) > 1:
            problems.append(f"predicate {pid!r} has {len(found)} different rubrics; give it one")
    return problems
