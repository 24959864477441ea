"""Run records: what one item leaves behind, for reports, resume and re-grading.

Each record is one JSON line appended to runs.jsonl with a single write under an exclusive
lock, so xdist workers never interleave and a reader never sees half a record as whole.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from . import __version__
from .config import ModelConfig
from .grading import Grade
from .suite.schema import ResolvedCase
from .trajectory import Trajectory

RECORD_SCHEMA = 1
#: the scalar fields that travel in user_properties (and so JUnit XML and xdist reports)
PROPERTY_FIELDS: tuple[str, ...] = (
    "model", "task", "tier", "variant", "instance", "run", "passed", "infra_error", "first_unmet",
    "failure_mode", "terminal_flag", "termination", "turns", "calls", "tokens_in", "tokens_out",
    "latency_s", "wall_s", "cost_usd",
)


def build_record(case: ResolvedCase, traj: Trajectory, grade: Grade | None, config: ModelConfig,
                 nodeid: str) -> dict[str, Any]:
    infra = traj.termination == "provider_error"
    passed = bool(grade and grade.passed and not infra)
    return {
        "schema": RECORD_SCHEMA,
        "plugin_version": __version__,
        "nodeid": nodeid,
        "model": config.name,
        "task": case.id,
        "tier": case.tier,
        "variant": case.variant,
        "instance": case.instance,
        "run": traj.run,
        "passed": passed,
        "infra_error": infra,
        "first_unmet": None if passed or infra or grade is None or grade.first_unmet is None else grade.first_unmet.code,
        "failure_mode": None if passed or infra or grade is None else grade.failure_mode,
        "terminal_flag": None if passed or infra or grade is None else grade.terminal_flag,
        "termination": traj.termination,
        "turns": len(traj.turns),
        "calls": len(traj.calls),
        "tokens_in": traj.tokens_in,
        "tokens_out": traj.tokens_out,
        "latency_s": round(traj.latency_s, 6),
        "wall_s": round(traj.wall_s, 6),
        "busy_s": round(traj.busy_s, 6),
        # hourly pricing charges the time the model was busy serving the episode, not the item's
        # wall clock (which grows with -n when workers queue on one server)
        "cost_usd": round(config.pricing.cost(traj.tokens_in, traj.tokens_out, traj.busy_s), 10),
        "error": traj.error,
        "case_hash": case.content_hash,
        "config": config.public(),
        "obligations": {v.code: v.ok for v in grade.verdicts} if grade else {},
        "trajectory": traj.model_dump(mode="json"),
    }


def properties(record: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(k, record[k]) for k in PROPERTY_FIELDS]


class RunLog:
    """Appends records to a JSONL file; one O_APPEND write per record, under flock."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view):]
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_records(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Complete records of a runs.jsonl, and a note for every line that is not one."""
    records, problems = [], []
    if not path.exists():
        return records, problems
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                problems.append(f"{path}:{n}: truncated last line ignored")
                continue
            try:
                records.append(json.loads(raw))
            except json.JSONDecodeError:
                problems.append(f"{path}:{n}: not a JSON record, ignored")
    return records, problems
