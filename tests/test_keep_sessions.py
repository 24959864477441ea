"""--agentfloor-keep-sessions N (issue 34): old session directories are pruned at a session's end, never the
current one, the newest complete one or the one `latest` points at; bad values are usage errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_agentfloor.reportdir import LATEST, SESSIONS, point_latest, prune_sessions

REPO = Path(__file__).resolve().parents[1]


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


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "cases" / "tier_A").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", pytester.path / "cases" / "tier_A")
    shutil.copy(REPO / "models.toml", pytester.path)
    return pytester


def test_sessions_pruned_at_the_end_of_a_run(bench: pytest.Pytester) -> None:
    args = ("cases", "--model", "oracle", "--instances", "i0", "--variants", "v0", "--no-probe",
            "-p", "no:cacheprovider", "--agentfloor-keep-sessions", "2")
    for _ in range(3):
        assert bench.runpytest(*args).ret == 0
    sessions = sorted((bench.path / "reports" / SESSIONS).iterdir())
    assert len(sessions) == 2
    assert (bench.path / "reports" / LATEST).resolve() == sessions[-1].resolve()
    result = bench.runpytest(*args)
    result.stdout.fnmatch_lines(["agentfloor: removed 1 old session(s) from *sessions (--agentfloor-keep-sessions 2)"])


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_bad_values_are_usage_errors(bench: pytest.Pytester, value: str) -> None:
    result = bench.runpytest("cases", "--model", "oracle", "--no-probe", "--agentfloor-keep-sessions", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfloor-keep-sessions: expected a whole number*"])
    ini = bench.runpytest("cases", "--model", "oracle", "--no-probe", "-o", f"agentfloor_keep_sessions={value}")
    assert ini.ret == pytest.ExitCode.USAGE_ERROR
