"""Pruning old session directories (issue 34): never the current one, the newest complete one or the one
`latest` points at."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentfloor.reportdir import LATEST, SESSIONS, point_latest, prune_sessions

def make(report: Path, sid: str, complete: bool) -> None:
    d = report / SESSIONS / sid
    d.mkdir(parents=True)
    (d / "session.json").write_text(json.dumps({"session_id": sid, "complete": complete}))


def test_prune_keeps_newest_current_latest_complete(tmp_path: Path) -> None:
    ids = [f"20261202-0000{n:02d}.000-abc" for n in range(8)]
    for n, sid in enumerate(ids):
        make(tmp_path, sid, complete=n == 1)  # only an old one is complete
    point_latest(tmp_path, ids[-1])
    removed = prune_sessions(tmp_path, 2, current=ids[-1])
    left = sorted(d.name for d in (tmp_path / SESSIONS).iterdir())
    assert left == [ids[1], ids[6], ids[7]]  # the newest two, and the newest complete one
    assert removed == [ids[0], *ids[2:6]]
    assert (tmp_path / LATEST).resolve().name == ids[-1]
    assert prune_sessions(tmp_path, 0, current=ids[-1]) == []  # 0 keeps every one
    assert prune_sessions(tmp_path, 1, current=ids[-1]) == [ids[6]]  # current and complete stay
