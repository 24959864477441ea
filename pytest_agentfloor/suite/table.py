"""`python -m pytest_agentfloor ladder-table`: write the Markdown table of the ladder's cases.

The table is generated, never typed: a test checks that the committed docs/ladder.md is exactly
what this command writes, so the doc cannot drift from the cases. The output depends only on the
case files (no dates, no paths), in a fixed order.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from .loader import CaseError, iter_case_files, load_case, resolve
from .schema import TIERS, TOOL_NAMES

HEADER = """# The AgentFloor ladder

Generated from `cases/` by `python -m pytest_agentfloor ladder-table`; do not edit by hand (a test
fails when this file is stale). Each tier adds one demand to the tier below: A0 instruction
following without tools, A one decisive tool call, B a two-call chain, C a branch on an
intermediate result, D synthesis of disagreeing sources with a failing call to recover from, E a
long plan under persistent constraints. How to write a case: [case-authoring.md](case-authoring.md).

Columns: *required tools* are the tools of the case's required steps (`a|b` means either), over
all instances; *turn budget* is in model turns; *call limit* is the most tool calls an episode may
make; *reference* is the reference solution's tool calls and model turns (a range when the
instance variants differ); *variants* are prompt paraphrases, *instances* fixture variants
(besides the base case i0).
"""


def _span(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}–{hi}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def load_rows(cases_dir: Path) -> list[dict[str, Any]]:
    """One row per case, in tier order then id order."""
    rows = []
    for path in iter_case_files(Path(cases_dir)):
        case, digest = load_case(path)
        resolved = [resolve(case, "v0", inst, digest) for inst in ["i0", *sorted(case.instances)]]
        required: set[str] = set()
        primary: set[str] = set()
        for rc in resolved:
            for step in rc.steps:
                required.add("|".join(sorted(set(step.tools), key=TOOL_NAMES.index)))
                primary.add(step.tool)
        rows.append({
            "id": case.id,
            "tier": case.tier,
            "title": case.title,
            "domain": case.domain,
            "tools": [t for t in TOOL_NAMES if t in case.tools],
            "required": sorted(required, key=lambda lab: [TOOL_NAMES.index(x) for x in lab.split("|")]),
            "primary": [t for t in TOOL_NAMES if t in primary],
            "turn_budget": case.turn_budget,
            "call_limits": [rc.call_limit for rc in resolved],
            "ref_calls": [sum(len(t.calls) for t in rc.reference) for rc in resolved],
            "ref_turns": [len(rc.reference) for rc in resolved],
            "variants": len(case.prompts),
            "instances": len(case.instances),
        })
    order = {t: i for i, t in enumerate(TIERS)}
    rows.sort(key=lambda r: (order[str(r["tier"])], str(r["id"])))
    return rows


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per tier: reference-length distribution over every (task, instance) reference."""
    out = []
    for tier in TIERS:
        mine = [r for r in rows if r["tier"] == tier]
        if not mine:
            continue
        calls = [n for r in mine for n in r["ref_calls"]]
        turns = [n for r in mine for n in r["ref_turns"]]
        out.append({
            "tier": tier, "tasks": len(mine), "references": len(calls),
            "turn_budget": _span([r["turn_budget"] for r in mine]),
            "calls_min": min(calls), "calls_median": statistics.median(calls), "calls_max": max(calls),
            "turns_min": min(turns), "turns_median": statistics.median(turns), "turns_max": max(turns),
            "items": sum(r["variants"] * (1 + r["instances"]) for r in mine),
        })
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(rows: list[dict[str, Any]], calibration: list[str] | None = None, evidence: str = "") -> str:
    """The whole doc: tasks, reference lengths, the calibration section, the tool index, then the
    measured evidence (docs/ladder-evidence.md, included verbatim: measurements are not generated)."""
    lines = [HEADER, "## Tasks", "",
             "| task | tier | title | domain | tools exposed | required tools | turn budget | call limit "
             "| reference calls | reference turns | variants | instances |",
             "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        tools = ", ".join(f"`{t}`" for t in r["tools"]) or "none"
        required = ", ".join(f"`{_cell(t)}`" for t in r["required"]) or "none"
        lines.append(
            f"| {r['id']} | {r['tier']} | {_cell(r['title'])} | {_cell(r['domain'])} | {tools} | {required} "
            f"| {r['turn_budget']} | {_span(r['call_limits'])} | {_span(r['ref_calls'])} | {_span(r['ref_turns'])} "
            f"| {r['variants']} | {r['instances']} |")
    summary = summarise(rows)
    lines += ["", "## Reference length by tier", "",
              "Over every reference solution of the tier (each task's base case and each instance variant).",
              "",
              "| tier | tasks | references | turn budget | calls min | calls median | calls max "
              "| turns min | turns median | turns max | items per model and run |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summary:
        lines.append(
            f"| {s['tier']} | {s['tasks']} | {s['references']} | {s['turn_budget']} | {s['calls_min']} "
            f"| {_num(s['calls_median'])} | {s['calls_max']} | {s['turns_min']} | {_num(s['turns_median'])} "
            f"| {s['turns_max']} | {s['items']} |")
    total = sum(s["items"] for s in summary)
    lines += ["", f"{len(rows)} tasks, {total} test items per model and run "
                  "(every task × prompt variant × instance).", ""]
    lines += calibration or []
    required_by: dict[str, set[str]] = {t: set() for t in TOOL_NAMES}
    for r in rows:
        for tool in r["primary"]:
            required_by[tool].add(r["id"])
    lines += ["## Tasks that require each tool", "",
              "A task counts for a tool when one of its required steps names that tool first (a step's "
              "alternative tools are not counted).", "",
              "| tool | tasks |", "|---|---|"]
    lines += [f"| `{t}` | {', '.join(sorted(required_by[t], key=lambda i: [x['id'] for x in rows].index(i)))} |"
              for t in TOOL_NAMES]
    text = "\n".join(lines) + "\n"
    return text + ("\n" + evidence.strip() + "\n" if evidence.strip() else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_agentfloor ladder-table",
                                     description="Write the Markdown table of the ladder's cases.")
    parser.add_argument("--cases", default="cases", help="the cases directory (default: cases)")
    parser.add_argument("--out", default="docs/ladder.md", help="where to write (default: docs/ladder.md; - for stdout)")
    args = parser.parse_args(argv)
    cases_dir = Path(args.cases)
    if not cases_dir.is_dir():
        parser.error(f"no cases directory at {cases_dir}")
    from .calibration import case_rows, render as calibration_section

    evidence = cases_dir.resolve().parent / "docs" / "ladder-evidence.md"
    try:
        text = render(load_rows(cases_dir), calibration_section(case_rows(cases_dir)),
                      evidence.read_text("utf-8") if evidence.is_file() else "")
    except CaseError as exc:
        print(exc.render())
        return 1
    if args.out == "-":
        print(text, end="")
        return 0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {out} ({len(text.splitlines())} lines)")
    return 0
