"""docs/real-models.md quotes the product's output on committed real-model records: it must stay true.

The compare block and the report's tables are re-derived from docs/examples/real-models/ (offline,
seconds), so a change of statistics, formatting or grading that moves a quoted figure fails here
instead of leaving the page to describe numbers the tool no longer prints.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "real-models.md"
RUNS = [REPO / "docs" / "examples" / "real-models" / f"{m}-ladder-v0.jsonl" for m in ("local", "local-1.5b")]


def _quoted_output() -> list[str]:
    block = re.search(r"```text\n(.*?)```", DOC.read_text(), re.S)
    assert block, "docs/real-models.md lost its compare output block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_compare_output_is_what_compare_prints(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "pytest_agentfloor", "compare", *map(str, RUNS)],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 1, out.stderr  # the gate: insufficient evidence on every tier
    printed = {line.rstrip() for line in out.stdout.splitlines()}
    missing = [line for line in _quoted_output() if line.rstrip() not in printed]
    assert not missing, "docs/real-models.md quotes lines compare no longer prints:\n" + "\n".join(missing)


def test_the_report_tables_are_what_report_writes(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pytest_agentfloor", "report", *map(str, RUNS), "--out", str(tmp_path),
                    "--reference", "local"], check=True, capture_output=True, text=True, cwd=REPO, timeout=300)
    written = set((tmp_path / "report.md").read_text().splitlines())
    quoted = [line for line in DOC.read_text().splitlines() if line.startswith("| ")]
    assert len(quoted) > 20
    missing = [line for line in quoted if line not in written]
    assert not missing, "docs/real-models.md quotes table rows report no longer writes:\n" + "\n".join(missing)
