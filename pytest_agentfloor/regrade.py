"""Re-grade stored trajectories under the current case files and graders, without any model.

`python -m pytest_agentfloor regrade reports/runs.jsonl [--cases DIR] [--write OUT]`
prints every outcome that changed (for example after a case's gold was corrected) and can
write a re-graded runs.jsonl that the report command reads like any other.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .kinds import is_case_file, load_file
from .results import RunLog, read_records
from .suite.loader import CaseError
from .trajectory import Trajectory


def _index(cases_dir: Path, problems: list[str]) -> dict[str, tuple[Any, Any]]:
    """task id -> (kind, entry) over every case file under `cases_dir` (ladder cases and call-site tables)."""
    index: dict[str, tuple[Any, Any]] = {}
    for path in sorted(cases_dir.rglob("*.toml")):
        if not is_case_file(path):
            continue
        try:
            kind, entries = load_file(path)
        except CaseError as exc:
            problems.append(exc.render())
            continue
        for entry in entries:
            index.setdefault(entry.id, (kind, entry))
    return index


def regrade_records(records: list[dict[str, Any]], cases_dir: Path) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """(re-graded records, lines describing changed outcomes, problems)."""
    problems: list[str] = []
    index = _index(cases_dir, problems)
    out, changes = [], []
    for rec in records:
        task = rec.get("task")
        if rec.get("infra_error") or "trajectory" not in rec:
            out.append(rec)
            continue
        if not isinstance(task, str) or task not in index:
            problems.append(f"{rec.get('nodeid', task)}: no case file for task {task!r} under {cases_dir}")
            out.append(rec)
            continue
        try:
            new = _regrade_one(rec, *index[task], task, changes, problems)
        except (KeyError, TypeError, ValueError) as exc:  # a hand-edited record: keep it as it is
            problems.append(f"{rec.get('nodeid', task)}: cannot be re-graded ({type(exc).__name__}: "
                            f"{str(exc)[:120]}); kept unchanged")
            new = rec
        out.append(new)
    return out, changes, problems


def _regrade_one(rec: dict[str, Any], kind: Any, entry: Any, task: str, changes: list[str],
                 problems: list[str]) -> dict[str, Any]:
    """One record re-graded against its current case; raises on a record of the wrong shape."""
    if (rec["variant"], rec["instance"]) not in entry.specs:
        problems.append(f"{rec['nodeid']}: {rec['variant']}-{rec['instance']} no longer exists in {task}")
        return rec
    resolved = entry.resolve(rec["variant"], rec["instance"])
    g = kind.grade(resolved, Trajectory.model_validate(rec["trajectory"]), None)
    new = dict(rec)
    new.update(
        passed=g.passed,
        first_unmet=None if g.passed else g.first_unmet.code,  # type: ignore[union-attr]
        failure_mode=g.failure_mode,
        terminal_flag=g.terminal_flag,
        obligations={v.code: v.ok for v in g.verdicts},
        case_hash=entry.content_hash,
    )
    if getattr(g, "facets", None) is not None:
        new["facets"] = g.facets
    before = (rec["passed"], rec.get("first_unmet"), rec.get("failure_mode"))
    after = (new["passed"], new["first_unmet"], new["failure_mode"])
    if before != after:
        changes.append(f"{rec['nodeid']}: {_fmt(before)} -> {_fmt(after)}")
    return new


def _fmt(outcome: tuple[bool, str | None, str | None]) -> str:
    passed, unmet, mode = outcome
    return "passed" if passed else f"failed ({unmet}, {mode})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_agentfloor regrade", description=__doc__.split("\n")[0])
    parser.add_argument("runs", type=Path, help="a runs.jsonl")
    parser.add_argument("--cases", type=Path, default=Path("cases"), help="the case directory (default: cases)")
    parser.add_argument("--write", type=Path, help="write the re-graded records to this runs.jsonl")
    args = parser.parse_args(argv)
    if not args.runs.exists():
        print(f"regrade: no such file: {args.runs}", file=sys.stderr)
        return 2
    if not args.cases.is_dir():
        print(f"regrade: --cases {args.cases} is not a directory", file=sys.stderr)
        return 2
    records, read_problems = read_records(args.runs)
    new, changes, problems = regrade_records(records, args.cases)
    for p in read_problems + problems:
        print(f"regrade: {p}", file=sys.stderr)
    for line in changes:
        print(line)
    passed_before = sum(1 for r in records if r.get("passed"))
    passed_after = sum(1 for r in new if r.get("passed"))
    print(f"re-graded {len(records)} record(s): {len(changes)} outcome(s) changed; "
          f"passed {passed_before} -> {passed_after}")
    if args.write:
        if args.write.exists():
            args.write.unlink()
        log = RunLog(args.write)
        for rec in new:
            log.append(rec)
        log.close()
        print(f"wrote {args.write}")
    return 0
