"""The plan's history (--co, --agentfloor-plan) reads one small cache per earlier session instead of every
record of every session, and never trusts a cache made from another state of the runs.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agentfloor import plan
from pytest_agentfloor.plan import HISTORY_CACHE, History, history


def _write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")


def _rec(model: str, tier: str, turns: int, cost: float | None, wall: float, infra: bool = False) -> dict:
    return {"model": model, "tier": tier, "turns": turns, "cost_usd": cost, "wall_s": wall, "infra_error": infra}


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    _write(tmp_path / "sessions" / "s1" / "runs.jsonl",
           [_rec("m", "A", 2, 0.5, 1.0), _rec("m", "A", 4, None, 3.0), _rec("m", "B", 1, 0.25, 2.0, infra=True)])
    _write(tmp_path / "sessions" / "s2" / "runs.jsonl", [_rec("m", "A", 6, 1.5, 5.0), _rec("n", "B", 3, 0.0, 1.0)])
    return tmp_path


def test_sums_over_sessions_match_the_records(reports: Path) -> None:
    past, n = history(reports)
    assert n == 2
    assert past[("m", "A")] == History(runs=3, turns=12.0, cost_usd=2.0, costed=2, wall_s=9.0)
    assert past[("n", "B")] == History(runs=1, turns=3.0, cost_usd=0.0, costed=1, wall_s=1.0)
    assert ("m", "B") not in past  # an infrastructure error is no history
    assert all((reports / "sessions" / s / HISTORY_CACHE).is_file() for s in ("s1", "s2"))


def test_a_second_plan_reads_the_caches_not_the_records(reports: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = history(reports)

    def no_reading(path: Path) -> None:
        raise AssertionError(f"read {path}")

    monkeypatch.setattr(plan, "read_records", no_reading)
    assert history(reports) == first


def test_a_grown_runs_file_is_read_again(reports: Path) -> None:
    history(reports)
    runs = reports / "sessions" / "s2" / "runs.jsonl"
    _write(runs, [_rec("n", "B", 5, 1.0, 4.0)])
    past, _ = history(reports)
    assert past[("n", "B")] == History(runs=2, turns=8.0, cost_usd=1.0, costed=2, wall_s=5.0)


@pytest.mark.parametrize("content", ["not json", "[]", '{"stamp": [1, 2], "rows": []}', "STAMP_BAD_ROW"])
def test_a_bad_or_stale_cache_is_ignored(reports: Path, content: str) -> None:
    expected = history(reports)
    cache = reports / "sessions" / "s1" / HISTORY_CACHE
    if content == "STAMP_BAD_ROW":  # the right stamp, a row a person could have edited into nonsense
        data = json.loads(cache.read_text())
        data["rows"][0][2] = -5
        content = json.dumps(data)
    cache.write_text(content)
    assert history(reports) == expected


def test_a_report_dir_that_refuses_the_cache_still_plans(reports: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = history(reports)[0]
    for cache in reports.glob(f"sessions/*/{HISTORY_CACHE}"):
        cache.unlink()

    def refuse(src: object, dst: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(plan.os, "replace", refuse)
    assert history(reports)[0] == expected
    assert not list(reports.glob("sessions/*/*plan-history*"))  # no cache, no temporary file left behind
