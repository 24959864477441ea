"""Reports: terminal tables at session end and report files (summary.json, tcr.csv, report.md, report.html).

Entry points: :func:`write_reports` (aggregate records and write every file), :func:`render_summary`
(session-end terminal tables), :func:`models_meta_from_records` (model metadata from full run
records) and ``python -m pytest_agentfloor report`` (:mod:`.cli`, rebuild from a runs.jsonl).
"""

from .files import REPORT_FILES, build_summary, models_meta_from_records, write_reports
from .terminal import render_summary, render_text

__all__ = ["REPORT_FILES", "build_summary", "models_meta_from_records", "render_summary", "render_text",
           "write_reports"]
