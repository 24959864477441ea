"""Report sections contributed by case kinds, through one registry.

The ladder's tables are the report's body; another kind (call sites) adds a section: a
statistic computed from the run records plus the tables that show it. A kind hands its sections
over through its ``sections()`` (kindspec.kind_sections); every writer (terminal, summary.json,
report.md, report.html) walks this one registry, so a kind never edits them, and this module
imports none of the writers or kinds at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .format import TextTable


@dataclass(frozen=True)
class ReportSection:
    key: str  # summary.json key and HTML anchor
    title: str
    #: (records, models meta, reference, alpha, options) -> the section's statistic, or None without data
    compute: Callable[..., Any]
    tables: Callable[[Any], list[TextTable]]
    figure: Callable[[Any], str] = lambda _: ""  # an inline SVG for report.html
    #: table key -> columns the terminal may drop, in order, to fit its width
    optional: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    files_only: frozenset[str] = frozenset()  # table keys too long for the terminal (report files show them)
    #: files written on request, outside the report dir: (statistic, models meta, options) -> {path: text};
    #: ValueError says why none can be written. Asked only when options[export_option] is set
    export: Callable[[Any, Mapping[str, Mapping[str, Any]], Mapping[str, Any]], dict[Path, str]] | None = None
    export_option: str = ""


SECTIONS: dict[str, ReportSection] = {}


def register_section(section: ReportSection) -> None:
    SECTIONS[section.key] = section


def _builtin() -> None:
    """The sections of the registered case kinds (each kind's ``sections()``), once."""
    global _kinds_read
    if not _kinds_read:
        from ..kinds import all_kinds
        from ..kindspec import kind_sections

        for kind in all_kinds():
            for section in kind_sections(kind):
                SECTIONS.setdefault(section.key, section)  # one registered by hand (a test) stays
        _kinds_read = True


_kinds_read = False


def compute_sections(records: Iterable[Mapping[str, Any]], meta: Mapping[str, Mapping[str, Any]] | None, *,
                     reference: str | None = None, alpha: float = 0.05,
                     options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """{key: statistic} for every registered section that has data; ``options`` e.g. callsite_weights."""
    _builtin()
    recs = list(records)
    out = {}
    for key, section in SECTIONS.items():
        value = section.compute(recs, meta or {}, reference, alpha, dict(options or {}))
        if value is not None:
            out[key] = value
    return out


def export_files(records: Iterable[Mapping[str, Any]], meta: Mapping[str, Mapping[str, Any]] | None, *,
                 reference: str | None = None, alpha: float = 0.05,
                 options: Mapping[str, Any] | None = None) -> tuple[dict[Path, str], list[str]]:
    """({path: text} of the exports the options ask for, why any asked for cannot be written).

    Computed apart from the report files, so an export is written whatever the report mode."""
    _builtin()
    opts = dict(options or {})
    wanted = [s for s in SECTIONS.values() if s.export is not None and s.export_option and opts.get(s.export_option)]
    if not wanted:
        return {}, []
    recs = list(records)
    files: dict[Path, str] = {}
    problems: list[str] = []
    for section in wanted:
        assert section.export is not None
        value = section.compute(recs, meta or {}, reference, alpha, opts)
        if value is None:
            problems.append(f"{opts[section.export_option]} not written: no {section.title.lower()} records")
            continue
        try:
            files.update(section.export(value, meta or {}, opts))
        except ValueError as exc:
            problems.append(str(exc))
    return files, problems


def section_tables(sections: Mapping[str, Any]) -> list[tuple[ReportSection, list[TextTable]]]:
    _builtin()
    return [(SECTIONS[k], SECTIONS[k].tables(v)) for k, v in sections.items() if k in SECTIONS]


def is_ladder(record: Mapping[str, Any]) -> bool:
    """Records the ladder's statistics read (call-site and other kinds report in their sections)."""
    return record.get("kind") in (None, "episode")  # pressure cells report in their own section
