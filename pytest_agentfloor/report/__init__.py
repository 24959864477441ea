"""Reports: terminal tables at session end and report files (summary.json, tcr.csv, report.md, report.html).

Entry points: :func:`write_reports` (aggregate records and write every file), :func:`render_summary`
(session-end terminal tables), :func:`models_meta_from_records` (model metadata from full run
records) and ``python -m pytest_agentfloor report`` (:mod:`.cli`, rebuild from a runs.jsonl).

They are imported when first asked for: the package is also the home of light modules read while
a run is in progress (``format``: the live progress line's "unknown"), which must not pull in the
statistics (numpy, scipy) and stall the line's first drawing for seconds.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .files import REPORT_FILES, build_summary, models_meta_from_records, write_reports
    from .terminal import render_summary, render_text

__all__ = ["REPORT_FILES", "build_summary", "models_meta_from_records", "render_summary", "render_text",
           "write_reports"]
_HOME = {"REPORT_FILES": "files", "build_summary": "files", "models_meta_from_records": "files",
         "write_reports": "files", "render_summary": "terminal", "render_text": "terminal"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
