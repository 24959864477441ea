"""Session-end terminal tables (controller only), rendered with rich into pytest's reporter.

A few compact tables rather than one wide one: TCR with 95% CI per model x tier; the paired
comparison against the reference (when one is set); failure modes with first-unmet obligations
and terminal flags; cost and latency; deployment recipes.

Determinism: every table whose rows start with ``│`` holds only values that are a function of
the records' outcomes (counts, seeded bootstrap intervals, p-values), so serial and xdist runs
print identical lines. The cost/latency table depends on timings and is drawn without an outer
border, so its lines never start with ``│``.
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Iterable, Literal

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..render import escape_surrogates, safe_text
from ..stats import Summary
from .files import REPORT_FILES, build_summary, models_meta_from_records
from .format import DASH, TextTable
from .sections import section_tables
from .tables import (
    config_line, cost_table, decision_caption, diagnostics_table, failure_table, instance_table, interval_caption,
    judge_line, paired_table, paired_undecided, recipes_note, recipes_table, tcr_long_table, unmet_table
)

STYLES: dict[str, str] = {
    "good": "green", "mid": "yellow", "bad": "red", "na": "dim", "best": "bold", "sig": "bold",
    "up": "green", "down": "red", "yes": "bold green", "raw": "yellow", "no": "dim", "infra": "yellow",
}


def _style(classes: str) -> str:
    return " ".join(STYLES[c] for c in classes.split() if c in STYLES)


def rich_table(t: TextTable, *, title: str | None = None, table_box: box.Box = box.HEAVY_HEAD,
               drop: Iterable[str] = (), wrap: Iterable[str] = ()) -> Table:
    """A :class:`TextTable` as a rich Table (cell classes become colours; ``drop`` removes columns).

    Columns named in ``wrap`` may wrap when the terminal is narrow; the others keep their text on
    one line (the model column keeps its full width so rows stay identifiable). An empty value
    reads ``-``, as it always has in the terminal.
    """
    dropped, wrapping = set(drop), set(wrap)
    keep = [i for i, h in enumerate(t.headers) if h not in dropped]
    table = Table(title=title or t.title or None, title_justify="left", box=table_box,
                  show_edge=table_box is not box.SIMPLE_HEAD)
    for i in keep:
        a = t.align[i]
        justify: Literal["left", "right", "center"] = "left" if a == "l" else "right" if a == "r" else "center"
        longest = max([len(t.headers[i]), *(len(r[i]) for r in t.rows)])
        if t.headers[i] in wrapping:
            table.add_column(t.headers[i], justify=justify, overflow="fold")
        else:
            table.add_column(t.headers[i], justify=justify, no_wrap=True, overflow="ellipsis",
                             min_width=min(longest, 32) if i == 0 else None)
    ends = set(t.sections)
    for n, (row, cls) in enumerate(zip(t.rows, t.classes)):
        table.add_row(*[Text("-" if row[i] == DASH else safe_text(row[i], multiline=False), style=_style(cls[i]))
                        for i in keep],
                      end_section=n in ends and n != len(t.rows) - 1)
    return table


def tier_table(records_or_summary: Iterable[dict[str, Any]] | Summary) -> Table:
    """Runs, passes, TCR with 95% CI and infrastructure errors per model and tier (``all`` = overall)."""
    summary = (records_or_summary if isinstance(records_or_summary, Summary)
               else _summary_of(list(records_or_summary)))
    return rich_table(tcr_long_table(summary))


def _summary_of(records: list[dict[str, Any]]) -> Summary:
    return build_summary(records, models_meta_from_records(records))[0]


def fitted_table(console: Console, t: TextTable, *, title: str | None = None, table_box: box.Box = box.HEAVY_HEAD,
                 drop: Iterable[str] = (), optional: Iterable[str] = (), wrap: Iterable[str] = ()) -> list[Any]:
    """Title line and table, minus as few ``optional`` columns (in that order) as it takes to fit the width.

    The title is its own line (a rich table title would wrap at the table's width).
    """
    dropped = list(drop)
    omitted: list[str] = []
    untitled = replace(t, title="")
    table = rich_table(untitled, table_box=table_box, drop=dropped, wrap=wrap)
    wide = console.options.update_width(10_000)
    # the optional columns first (in the order given), then the rightmost others (the tables put the
    # most telling columns first): whole columns go, so rich never has to cut a number to fit
    rest = [h for h in reversed(t.headers[1:]) if h not in dropped and h not in optional]
    for col in [*optional, *rest]:
        if console.measure(table, options=wide).maximum <= console.width:
            break
        omitted.append(col)
        table = rich_table(untitled, table_box=table_box, drop=dropped + omitted, wrap=wrap)
    blocks: list[Any] = [Text(title or t.title, style="bold"), table]
    if omitted:
        blocks.append(Text(f"(narrow terminal: {', '.join(omitted)} omitted; see report.md)", style="dim"))
    return blocks


def render_text(summary: Summary, *, width: int = 120, markup: bool = False) -> str:
    """Every terminal table as text (ANSI colours iff ``markup``), separated by blank lines."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=markup, color_system="standard" if markup else None,
                      highlight=False, emoji=False, no_color=not markup, legacy_windows=False)
    groups: list[list[Any]] = [[Text(config_line(summary), style="dim"),
                                *fitted_table(console, tcr_long_table(summary), optional=("TCR infra=fail",)),
                                Text(interval_caption(summary), style="dim")]]
    paired = paired_table(summary)
    if paired is not None:
        ref = summary.paired.reference
        groups.append([
            *fitted_table(console, paired, drop=("model TCR", "ref TCR"), optional=("90% CI", "p", "pairs"),
                          title=f"AgentFloor: paired comparison against {ref} "
                                f"(margin ±{summary.paired.margin_pp:g} pp, Holm-adjusted)"),
            Text("yes = holds after Holm adjustment, yes† = unadjusted only, no = refuted (the interval excludes "
                 "it); insufficient evidence: too few = "
                 f"fewer than {summary.paired.n_min_pairs} pairs, too few to certify the margin at all, unclear = the "
                 "interval straddles the margin. "
                 + decision_caption(summary) + " " + interval_caption(summary) + " "
                 f"b/c: McNemar's discordant pairs, only the model / only {ref} passed.", style="dim")])
    failures = failure_table(summary)
    if failures.rows:
        groups.append(fitted_table(console, failures))
        unmet = unmet_table(summary)
        groups.append([*fitted_table(console, unmet), *[Text(note, style="dim") for note in unmet.notes[1:]]])
    else:
        groups.append([Text("AgentFloor: no model failures", style="green")])
    diag = diagnostics_table(summary)
    if diag is not None:
        groups.append(fitted_table(console, diag, title="AgentFloor: " + diag.title[0].lower() + diag.title[1:]))
    inst = instance_table(summary)
    if inst is not None:
        groups.append(fitted_table(console, inst, title="AgentFloor: " + inst.title[0].lower() + inst.title[1:]))
    groups.append([Text(judge_line(summary), style="dim")])
    groups.append(fitted_table(
        console, cost_table(summary), table_box=box.SIMPLE_HEAD, drop=("infra $",),
        optional=("model s/pass", "tokens/run", "model s/run", "$/pass cloud GPU", "params", "$/run cloud GPU",
                  "$/pass self-hosted"),
        title="AgentFloor: cost and latency, all tiers (self-hosted and cloud GPU; Pareto uses self-hosted)"))
    recipes = recipes_table(summary)
    groups.append(fitted_table(  # cost and wall per pass depend on timings: they are in the table above
        console, recipes, drop=("cost/pass", "wall/pass"), wrap=[h for h in recipes.headers if h.startswith("τ")],
        title="AgentFloor: deployment recipes (smallest model whose 95% CI lower bound on TCR clears τ)"))
    why = recipes_note(summary)
    if why:
        groups[-1].append(Text(why, style="dim"))
    undecided = paired_undecided(summary)
    if undecided:
        groups[-1].append(Text(undecided, style="dim"))
    if summary.warnings:
        groups.append([Text(f"warning: {safe_text(w, multiline=False)}", style="yellow") for w in summary.warnings])
    for i, group in enumerate(groups):
        if i:
            console.print()
        for block in group:
            console.print(block)
    return buf.getvalue()


def render_summary(terminalreporter: Any, records: list[dict[str, Any]], summary: Summary | None = None, *,
                   mode: str = "term", out_dir: Path | None = None,
                   models_meta: dict[str, dict[str, Any]] | None = None,
                   section_options: dict[str, Any] | None = None) -> None:
    """Write the session-end tables through pytest's terminal reporter.

    ``summary``: the Summary returned by :func:`~pytest_agentfloor.report.write_reports`; when
    omitted it is computed here from ``records`` with default options (``models_meta`` supplies
    params for the size order). ``mode``: ``"none"`` prints nothing,
    ``"term"`` the tables, ``"all"`` the tables and, with ``out_dir``, where the report files are.
    """
    if mode == "none":
        return
    if summary is None:
        summary = build_summary(records, models_meta or models_meta_from_records(records))[0]
    markup = bool(getattr(terminalreporter, "hasmarkup", False))
    width = max(int(terminalreporter.config.get_terminal_writer().fullwidth), 80)
    from .files import prepare_records
    from .sections import compute_sections

    sections = compute_sections(prepare_records(records)[0], models_meta or models_meta_from_records(records),
                                reference=summary.config.get("reference"), options=section_options)
    terminalreporter.write_sep("=", "agentfloor")
    if summary.model_order or not sections:
        terminalreporter.write(escape_surrogates(render_text(summary, width=width, markup=markup)))
    if sections:
        terminalreporter.write(escape_surrogates(section_text(sections, width=width, markup=markup)))
    if mode == "all" and out_dir is not None:
        shown = ", ".join(str(Path(out_dir) / f) for f in REPORT_FILES)
        terminalreporter.write_line(safe_text(f"agentfloor reports: {shown}"))


def section_text(sections: Mapping[str, Any], *, width: int = 120, markup: bool = False) -> str:
    import io

    from rich.console import Console

    from ..render import safe_text

    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=markup, color_system="standard" if markup else None,
                      highlight=False, emoji=False, no_color=not markup, legacy_windows=False)
    for section, tabs in section_tables(sections):
        for t in tabs:
            if t.key in section.files_only:
                continue
            for part in fitted_table(console, t, title=f"AgentFloor: {t.title}",
                                     optional=section.optional.get(t.key, ())):
                console.print(part)
            for note in t.notes:
                console.print(safe_text(note), style="dim", markup=False)
            console.print()
    return buf.getvalue()
