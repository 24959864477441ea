"""The ladder's structure per tier, next to the published benchmark's, with stated tolerances.

A tier cell means the same thing as seed 000's only if the tier asks the same of a model: as
many tools on the menu, as many calls in the reference, as much budget slack, as many validated
submissions and scripted failures. The authors' figures are numbers taken from their public tasks
(rkarmaka/AgentFloor `tasks/*/*.yaml`; their tasks and prompts are not ours to copy). Pure
functions of the case files; docs/ladder.md shows the table and tests/test_ladder_calibration.py
fails when a tier leaves its tolerance.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .loader import iter_case_files, load_case, resolve
from .schema import TIERS, ResolvedCase

#: tiers the published benchmark has tool tasks in (A0 has no tools, so no structure to match)
TOOL_TIERS = ("A", "B", "C", "D", "E")


@dataclass(frozen=True)
class Target:
    """One published figure and the band ours must fall in."""

    metric: str
    tier: str
    authors: float
    low: float
    high: float
    what: str

    def holds(self, value: float) -> bool:
        return self.low - 1e-9 <= value <= self.high + 1e-9


#: the authors' per-tier figures (issue 26's measurement of tasks/*/*.yaml and seed 000's text) and
#: our tolerance around each: calls within 0.5 (A-C), 0.8 (D), 1.0 (E); counts of five tasks within one
TARGETS: tuple[Target, ...] = (
    Target("menu", "A", 1.0, 1.0, 1.0, "tools on the menu (mean): exactly the needed tool"),
    Target("calls", "A", 1.0, 1.0, 1.0, "reference calls (mean)"),
    Target("menu", "B", 2.0, 1.5, 2.5, "tools on the menu (mean)"),
    Target("calls", "B", 1.8, 1.3, 2.3, "reference calls (mean)"),
    Target("calls", "C", 2.2, 1.7, 2.7, "reference calls (mean)"),
    Target("submissions", "C", 4, 3, 5, "tasks that end in a validated submission (of 5)"),
    Target("calls", "D", 2.8, 2.0, 3.6, "reference calls (mean)"),
    Target("failures", "D", 2, 1, 3, "tasks with a scripted failure (of 5)"),
    Target("calls", "E", 5.4, 4.4, 6.4, "reference calls (mean)"),
    Target("budget", "E", 10.6, 9.6, 11.6, "step budget (mean; the authors' 10/9/10/12/12)"),
)
#: the one reference the paper calls tight (seed 000: E1's "declared 10-step budget is genuinely
#: tight there, and only there"): it may use its whole budget; every other needs a turn of slack
TIGHT: frozenset[str] = frozenset({"E1"})
#: tier A keeps the paper's 2-step budget for its 1-call tasks: the call and the answer, no spare
#: turn (seed 000: "Step budgets are 1/2/4/6/8/10"); the only tier where the budget, not the task, is tight
TIGHT_TIERS: frozenset[str] = frozenset({"A"})


def sequential_turns(rc: ResolvedCase) -> int:
    """Model turns the reference needs when a model makes ONE call per turn: each call a turn, plus
    a final text turn unless an accepted submission ends the episode."""
    calls = sum(len(t.calls) for t in rc.reference)
    ends_by_submission = rc.needs_submission and not rc.needs_answer
    return calls + (0 if ends_by_submission else 1)


def case_rows(cases_dir: Path) -> list[dict[str, Any]]:
    """Per task (base case i0): the structural figures the targets are about."""
    rows = []
    for path in iter_case_files(Path(cases_dir)):
        case, digest = load_case(path)
        if case.tier not in TIERS or path.parent.name != f"tier_{case.tier}":
            continue
        refs = [resolve(case, "v0", inst, digest) for inst in ["i0", *sorted(case.instances)]]
        base = refs[0]
        rows.append({
            "id": case.id, "tier": case.tier, "menu": len(case.tools),
            "calls": sum(len(t.calls) for t in base.reference), "budget": base.turn_budget,
            "submission": base.needs_submission, "failures": bool(base.fixtures.failures),
            "constraints": len(base.fixtures.constraints),
            "min_slack": min(rc.turn_budget - sequential_turns(rc) for rc in refs),
        })
    return rows


def tier_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per tool tier: the figures the targets compare, and the smallest slack of any reference."""
    out = []
    for tier in TOOL_TIERS:
        mine = [r for r in rows if r["tier"] == tier]
        if not mine:
            continue
        out.append({
            "tier": tier, "tasks": len(mine),
            "menu": statistics.mean(r["menu"] for r in mine),
            "calls": statistics.mean(r["calls"] for r in mine),
            "budget": statistics.mean(r["budget"] for r in mine),
            "submissions": sum(r["submission"] for r in mine),
            "failures": sum(r["failures"] for r in mine),
            "constraints": statistics.mean(r["constraints"] for r in mine),
            "min_slack": min(r["min_slack"] for r in mine),
        })
    return out


def verdicts(rows: list[dict[str, Any]]) -> list[tuple[Target, float, bool]]:
    """Each target with our value and whether it holds."""
    table = {t["tier"]: t for t in tier_table(rows)}
    return [(tg, float(table[tg.tier][tg.metric]), tg.holds(float(table[tg.tier][tg.metric])))
            for tg in TARGETS if tg.tier in table]


def slack_problems(rows: list[dict[str, Any]]) -> list[str]:
    """References that do not fit their budget one call per turn with a turn to spare (E1: none to spare)."""
    def need(r: dict[str, Any]) -> int:
        return 0 if r["id"] in TIGHT or r["tier"] in TIGHT_TIERS else 1

    return [f"{r['id']}: {r['min_slack']} turn(s) of slack, needs {need(r)}" for r in rows
            if r["tier"] in TOOL_TIERS and r["min_slack"] < need(r)]


def render(rows: list[dict[str, Any]]) -> list[str]:
    """The Markdown section of docs/ladder.md: our figures next to the authors', with the tolerance."""
    def fmt(x: float) -> str:
        return f"{x:.1f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))

    lines = ["## Calibration against the published benchmark", "",
             "Per tier, over each task's base case: ours next to the authors' figure (numbers from their "
             "public `tasks/*/*.yaml`), with the band ours must fall in. "
             "`tests/test_ladder_calibration.py` fails when a tier leaves a band (a row marked *out* "
             "would be a known gap listed in that test; none is).", "",
             "| tier | measure | ours | authors | tolerance | |", "|---|---|---:|---:|---:|---|"]
    for tg, value, ok in verdicts(rows):
        band = fmt(tg.low) if tg.low == tg.high else f"{fmt(tg.low)}–{fmt(tg.high)}"
        lines.append(f"| {tg.tier} | {tg.what} | {fmt(round(value, 2))} | {fmt(tg.authors)} | {band} "
                     f"| {'ok' if ok else '**out**'} |")
    lines += ["", "Every reference solution must fit its step budget when a model makes one call per turn, "
              "with at least one turn to spare (the answer turn counted), except E1 (the paper: its budget is "
              "\"genuinely tight\") and tier A (the paper's 2 steps for 1 call: the call and the answer). "
              "Smallest slack per tier, in turns:", "",
              "| tier | " + " | ".join(t["tier"] for t in tier_table(rows)) + " |",
              "|---|" + "---:|" * len(tier_table(rows)),
              "| slack | " + " | ".join(str(t["min_slack"]) for t in tier_table(rows)) + " |", ""]
    return lines + CHANGES


#: what the re-calibration of tiers C, D and E changed, and why (issue 26); shown under the table
CHANGES: list[str] = [
    "What the re-calibration of C, D and E changed (issue 26): the references needed too many calls "
    "(C 3.0, D 5.2, E 10.8 against the authors' 2.2, 2.8 and 5.4) and E's budgets (10-13) were not the "
    "authors' 10/9/10/12/12, so our C-E cells asked more execution of a model than the published ones, "
    "while our procedural prompts (\"first look up X, then ...\") asked less planning. Now:", "",
    "* prompts state the goal and its constraints, never the sequence of calls (C, D, E);",
    "* C: the prompt names what only pointed at the next record (C3's suppliers, C4's requested slot), "
    "so the branch is the task; C5 ends in a JSON answer, so four of five tasks end in a validated "
    "submission, as the authors';",
    "* D: the prompt names the sources (D1, D5) or one `compare_records` call reads every value "
    "(D2, D3, D4; D4's search results show each sensor's status); scripted failures in D1 and D4 only "
    "(the authors' two of five); D5 no longer has one;",
    "* E: per-task budgets 10/9/10/12/12; a search that returns only eligible records (E2), a record "
    "that lists the candidates (E4) and one comparison of every candidate's price or cost replace a "
    "read per candidate; only the exclusions and the chosen record are checked, and exhaustive "
    "checking (`partial_constraint_check`) stays only where the case declares it (E1, E5); E1 keeps "
    "its tight 8 calls in 10; E3 ends in an answer, as the published E3.", "",
]
