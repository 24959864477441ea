"""The plan's history (--co, --agentfloor-plan) reads one small cache per earlier session instead of every
record of every session, and never trusts a cache made from another state of the runs.jsonl."""

from __future__ import annotations

import json
import os
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


# -- a hostile report dir (red team of this cache: each case hung, crashed or wrote elsewhere before) ------
def _cache_of(reports: Path, session: str = "s1") -> Path:
    return reports / "sessions" / session / HISTORY_CACHE


@pytest.mark.parametrize("kind", ["dev_zero", "fifo", "huge", "directory"])
def test_a_cache_that_is_no_small_regular_file_is_never_read(reports: Path, kind: str) -> None:
    expected = history(reports)
    cache = _cache_of(reports)
    cache.unlink()
    if kind == "dev_zero":  # read whole, it filled the memory
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero here")
        cache.symlink_to("/dev/zero")
    elif kind == "fifo":  # opened, it blocked the run for ever
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(cache)
    elif kind == "huge":
        cache.write_bytes(b" " * (plan.MAX_CACHE_BYTES + 1))
    else:
        cache.mkdir()
    assert history(reports) == expected


@pytest.mark.parametrize("content", ["[" * 200_000, "NESTED_ROW", "BIG_INT"])
def test_no_cache_content_crashes_the_plan(reports: Path, content: str) -> None:
    expected = history(reports)
    cache = _cache_of(reports)
    data = json.loads(cache.read_text())
    if content == "BIG_INT":  # an integer no float can hold
        data["rows"][0][3] = 10**400
        content = json.dumps(data)
    elif content == "NESTED_ROW":
        data["rows"][0] = [[[[]]]]
        content = json.dumps(data)
    cache.write_text(content)
    assert history(reports) == expected


@pytest.mark.parametrize("row_change", [
    {2: 0, 5: 0},  # no runs
    {2: 0.5},  # half a run
    {5: 10**6},  # more costed runs than runs
    {5: True},  # a boolean is no count
    {4: float("inf")},
])
def test_a_row_records_could_not_make_is_not_trusted(reports: Path, row_change: dict) -> None:
    expected = history(reports)
    cache = _cache_of(reports)
    data = json.loads(cache.read_text())
    for index, value in row_change.items():
        data["rows"][0][index] = value
    cache.write_text(json.dumps(data))
    assert history(reports) == expected


def test_a_link_left_at_a_temporary_name_is_never_written_through(reports: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    session = reports / "sessions" / "s1"
    for pid in range(os.getpid() - 50, os.getpid() + 500):  # the names a guessable scheme would use
        (session / f".{HISTORY_CACHE}.{pid}.tmp").symlink_to(victim)
    history(reports)
    assert victim.read_text() == "keep me"
    assert _cache_of(reports).is_file() and not _cache_of(reports).is_symlink()
    assert json.loads(_cache_of(reports).read_text())["rows"]


def test_a_link_at_the_caches_own_name_is_replaced_not_followed(reports: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    _cache_of(reports).symlink_to(victim)
    expected_rows = history(reports)
    assert victim.read_text() == "keep me"
    assert not _cache_of(reports).is_symlink() and history(reports) == expected_rows
