"""report.md: every report table as GitHub-flavoured Markdown (deterministic text)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..render import safe_markdown, safe_markdown_text
from ..stats import Summary
from .format import TextTable
from .sections import section_tables
from .tables import (
    config_line, cost_by_tier_table, cost_table, diagnostics_table, failure_table, instance_table, judge_table,
    models_table, paired_table, pareto_lines, recipes_table, reliability_table, tcr_matrix_table, unmet_table
)


def _cell(text: str, cls: str = "") -> str:
    text = safe_markdown(text)
    return f"**{text}**" if "best" in cls.split() else text


def md_table(t: TextTable, *, heading: str = "##") -> str:
    lines = [f"{heading} {t.title}", ""]
    if not t.rows:
        lines += ["(none)", ""]
    else:
        sep = {"l": ":---", "r": "---:", "c": ":---:"}
        lines.append("| " + " | ".join(_cell(h) for h in t.headers) + " |")
        lines.append("| " + " | ".join(sep[a] for a in t.align) + " |")
        for row, cls in zip(t.rows, t.classes):
            lines.append("| " + " | ".join(_cell(c, k) for c, k in zip(row, cls)) + " |")
        lines.append("")
    for note in t.notes:
        lines += [note, ""]
    return "\n".join(lines)


def render_markdown(summary: Summary, meta: Mapping[str, Mapping[str, Any]]) -> str:
    parts = ["# AgentFloor report", "", config_line(summary), ""]
    if summary.warnings:
        parts += ["**Warnings**", "", *[f"- {w}" for w in summary.warnings], ""]
    parts.append(md_table(models_table(summary, meta)))
    parts.append(md_table(tcr_matrix_table(summary)))
    paired = paired_table(summary)
    if paired is not None:
        parts.append(md_table(paired))
    else:
        parts += ["## Paired comparison", "", f"Not computed: {summary.paired.reason}.", ""]
    parts.append(md_table(recipes_table(summary)))
    parts.append(md_table(cost_table(summary)))
    parts.append(md_table(cost_by_tier_table(summary)))
    parts += ["## Pareto front (cost per run vs TCR)", "", *[f"- {line}" for line in pareto_lines(summary)], ""]
    failures = failure_table(summary)
    if failures.rows:
        failures.title = "Failure modes"
        unmet = unmet_table(summary)
        unmet.title = "First unmet obligation and terminal flag"
        parts += [md_table(failures), md_table(unmet)]
    else:
        parts.append("## Failure modes\n\nNo model failures.\n")
    for extra in (diagnostics_table(summary), reliability_table(summary), instance_table(summary)):
        if extra is not None:
            parts.append(md_table(extra))
    parts.append(md_table(judge_table(summary)))
    # names from a stored file may carry anything: no control characters or raw HTML in any line
    return safe_markdown_text("\n".join(parts).rstrip("\n") + "\n")


def section_markdown(sections: Mapping[str, Any]) -> str:
    parts = []
    for section, tabs in section_tables(sections):
        parts += [f"# {section.title}", ""] + [md_table(t) for t in tabs]
    # names from stored records may carry anything: no control characters or raw HTML in any line
    return safe_markdown_text("\n".join(parts))
