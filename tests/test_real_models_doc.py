"""docs/real-models.md quotes the product's output on committed real-model records: it must stay true.

Every `compare` and `report` command the page shows is run on the committed records in
docs/examples/real-models/ (offline, seconds); every quoted output line must be one compare prints,
every table row one report writes. A change of statistics, formatting or grading that moves a quoted
figure fails here instead of leaving the page to describe numbers the tool no longer prints.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "real-models.md"


def _commands(verb: str) -> list[list[str]]:
    """The page's `python -m pytest_agentfloor VERB ...` commands (fenced shell blocks), as argv."""
    found = re.findall(rf"^python -m pytest_agentfloor {verb} .*$", DOC.read_text(), re.M)
    assert found, f"docs/real-models.md shows no {verb} command"
    return [shlex.split(line)[3:] for line in found]


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "pytest_agentfloor", *args], capture_output=True, text=True,
                         cwd=REPO, timeout=600)
    assert out.returncode in (0, 1), out.stderr  # 1: a gate that did not pass is a measurement
    return out


def test_every_quoted_output_line_is_what_compare_prints() -> None:
    printed = {line.rstrip() for args in _commands("compare") for line in _run(args).stdout.splitlines()}
    blocks = re.findall(r"```text\n(.*?)```", DOC.read_text(), re.S)
    quoted = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert len(quoted) > 10
    missing = [line for line in quoted if line.rstrip() not in printed]
    assert not missing, "docs/real-models.md quotes lines compare no longer prints:\n" + "\n".join(missing)


def test_every_table_row_is_what_report_writes(tmp_path: Path) -> None:
    written: set[str] = set()
    for n, args in enumerate(_commands("report")):
        for flag in ("--out", "--routing-out"):  # written under tmp_path, never into the checkout
            if flag in args:
                i = args.index(flag)
                args[i + 1] = str(tmp_path / str(n) / Path(args[i + 1]).name) if flag != "--out" else \
                    str(tmp_path / str(n))
        _run(args)
        written |= set((tmp_path / str(n) / "report.md").read_text().splitlines())
    (routing,) = tmp_path.glob("*/routing.json")  # the page: intent and codegen move to the 0.5B
    sites = json.loads(routing.read_text())["sites"]
    assert {s: v["model"] for s, v in sites.items() if v["moved"]} == {"intent": "local", "codegen": "local"}
    quoted = [line for line in DOC.read_text().splitlines() if line.startswith("| ")]
    assert len(quoted) > 20
    missing = [line for line in quoted if line not in written]
    assert not missing, "docs/real-models.md quotes table rows report no longer writes:\n" + "\n".join(missing)


@pytest.mark.parametrize("suite", ["ladder", "callsite", "pressure"])
def test_the_records_are_complete_sessions_of_both_models(suite: str) -> None:
    """Each file is one model's run of one suite, one record per item (the last, where a resume re-ran it)."""
    for model in ("local", "local-1.5b"):
        path = REPO / "docs" / "examples" / "real-models" / f"{model}-{suite}.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert records and {r["model"] for r in records} == {model}
        assert len({r["nodeid"] for r in records}) == len(records)
