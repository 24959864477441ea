"""One item's semantic verdicts: every semantic predicate of its case, judged or keyword-checked.

With a judge, each predicate of the case is put to the judge (cache first); without one, the
predicate's keyword checks decide it (the stand-in). Either way the record says which it was,
so the reports can count both. Runs in the item's setup, after the episode: a judge that
fails makes the item an infrastructure error, never a model failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .client import Judge, JudgeError, Judgment
from ..suite.predicates import SemanticGroup, semantic_groups
from .prompt import PROMPT_VERSION

if TYPE_CHECKING:
    from ..suite.schema import ResolvedCase
    from ..trajectory import Trajectory

__all__ = ["Assessment", "JudgeError", "assess", "keyword_judgment", "reference_answer"]


@dataclass
class Assessment:
    judge: str | None = None
    fingerprint: str | None = None
    verdicts: list[Judgment] = field(default_factory=list)
    error: str | None = None

    def by_predicate(self) -> dict[str, Judgment]:
        return {j.predicate: j for j in self.verdicts}

    def count(self, source: str) -> int:
        return sum(1 for j in self.verdicts if j.source == source)

    def record(self) -> dict[str, Any]:
        """The run record's "judge" section."""
        return {"model": self.judge, "fingerprint": self.fingerprint,
                "prompt_version": PROMPT_VERSION if self.judge else None,
                "verdicts": [j.to_json() for j in self.verdicts], "error": self.error}

    def scalars(self) -> dict[str, Any]:
        """The fields that travel in user_properties (results.JUDGE_FIELDS)."""
        asked = [j for j in self.verdicts if j.source == "judge"]
        return {
            "judge_model": self.judge,
            "judge_verdicts": len(asked),
            "keyword_verdicts": self.count("keyword"),
            "judge_fails": sum(1 for j in asked if not j.passed),
            "judge_cached": sum(1 for j in asked if j.cached),
            "judge_requests": sum(1 for j in asked if not j.cached),
            "judge_error": self.error is not None,
            "judge_cost_usd": (None if any(j.cost_usd is None for j in asked)
                               else round(sum(j.cost_usd or 0.0 for j in asked), 10)),
            "judge_latency_s": round(sum(j.latency_s for j in asked), 6),
        }

    def lines(self) -> list[str]:
        """What the judge saw, for the failure message."""
        if not self.verdicts and not self.error:
            return []
        head = f"semantic checks ({f'judge {self.judge}, prompt {PROMPT_VERSION}' if self.judge else 'keyword stand-in, no --agentfloor-judge'}):"
        return [head, *(f"  {j.line()}" for j in self.verdicts)] + ([f"  judge error: {self.error}"] if self.error else [])


def judged_alike(record: dict[str, Any], judge_fp: str | None) -> bool:
    """Whether a stored record's semantic verdicts came from the judge `judge_fp` (None: keywords).

    --resume keeps only such records; a record from before the judge existed counts as keyword-judged.
    """
    section = record.get("judge")
    if not isinstance(section, dict):
        return judge_fp is None
    if not section.get("verdicts"):
        return True  # nothing was judged (no semantic check, or no final text)
    return section.get("fingerprint") == judge_fp


def reference_answer(case: "ResolvedCase") -> str | None:
    finals = [t.final for t in case.reference if t.final]
    return finals[-1] if finals else None


def keyword_judgment(group: SemanticGroup, text: str) -> Judgment:
    from ..grading.obligations import check_answer

    for check in group.checks:
        ok, expected, observed = check_answer(check, text)
        if not ok:
            return Judgment(group.predicate, "keyword", False, f"expected {expected}; observed {observed}", group.rubric)
    return Judgment(group.predicate, "keyword", True, "every keyword check holds", group.rubric)


def assess(case: "ResolvedCase", traj: "Trajectory", judge: Judge | None) -> Assessment:
    """Verdicts for every semantic predicate of `case` on the episode's final text.

    No final text, no verdicts (obligation Q fails on the missing answer itself). A judge that
    cannot give a verdict sets `error` (the verdicts it gave are kept) and stops there.
    """
    out = Assessment(judge.name if judge else None, judge.fingerprint if judge else None)
    text = traj.final_answer
    if not text or not text.strip():
        return out
    groups = semantic_groups(case)
    if judge is None:
        out.verdicts = [keyword_judgment(g, text) for g in groups]
        return out
    ref = reference_answer(case)
    for g in groups:
        try:
            out.verdicts.append(judge.judge(case_id=case.id, task=case.prompt, reference=ref, predicate=g.predicate,
                                            rubric=g.rubric, text=text))
        except JudgeError as exc:
            out.error = str(exc)
            break
    return out
