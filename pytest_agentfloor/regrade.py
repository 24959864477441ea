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

from .grading import grade
from .results import RunLog, read_records
from .suite.loader import CaseError, iter_case_files, load_case, resolve
from .trajectory import Trajectory


def regrade_records(records: list[dict[str, Any]], cases_dir: Path) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """(re-graded records, lines describing changed outcomes, problems)."""
    files = {p.stem: p for p in iter_case_files(cases_dir)}
    loaded: dict[str, Any] = {}
    out, changes, problems = [], [], []
    for rec in records:
        task = rec.get("task")
        if rec.get("infra_error") or "trajectory" not in rec:
            out.append(rec)
            continue
        if not isinstance(task, str) or task not in files:
            problems.append(f"{rec.get('nodeid', task)}: no case file for task {task!r} under {cases_dir}")
            out.append(rec)
            continue
        if task not in loaded:
            try:
                loaded[task] = load_case(files[task])
            except CaseError as exc:
                problems.append(exc.render())
                loaded[task] = None
        if loaded[task] is None:
            out.append(rec)
            continue
        try:
            new = _regrade_one(rec, *loaded[task], task, changes, problems)
        except (KeyError, TypeError, ValueError) as exc:  # a hand-edited record: keep it as it is
            problems.append(f"{rec.get('nodeid', task)}: cannot be re-graded ({type(exc).__name__}: "
                            f"{str(exc)[:120]}); kept unchanged")
            new = rec
        out.append(new)
    return out, changes, problems


def _regrade_one(rec: dict[str, Any], case: Any, digest: str, task: str, changes: list[str],
             problems: list[str]) -> dict[str, Any]:
    """One record re-graded against its current case; raises on a record of the wrong shape."""
    if rec["instance"] != "i0" and rec["instance"] not in case.instances or rec["variant"] not in case.prompts:
        problems.append(f"{rec['nodeid']}: {rec['variant']}-{rec['instance']} no longer exists in {task}")
        return rec
    resolved = resolve(case, rec["variant"], rec["instance"], digest)
    g = grade(resolved, Trajectory.model_validate(rec["trajectory"]))
    new = dict(rec)
    new.update(
        passed=g.passed,
        first_unmet=None if g.passed else g.first_unmet.code,  # type: ignore[union-attr]
        failure_mode=g.failure_mode,
        terminal_flag=g.terminal_flag,
        obligations={v.code: v.ok for v in g.verdicts},
        case_hash=digest,
    )
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
