"""pytest_agentfloor_record: a conftest sees each run's whole record as plain data (the trajectory too)
and what it adds is stored; without an implementation the record's text is encoded from the
Trajectory itself (results.record_and_text text_only), which must not change a line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CONFTEST = '''
def pytest_agentfloor_record(record):
    traj = record["trajectory"]
    assert isinstance(traj, dict), type(traj)
    record["team"] = "ops"
    record["first_tool"] = traj["turns"][0]["calls"][0]["name"] if traj["turns"][0]["calls"] else None
'''


def _lines(path: Path) -> dict[str, dict]:
    return {r["nodeid"]: r for r in map(json.loads, (path / "latest" / "runs.jsonl").read_text().splitlines())}


@pytest.mark.parametrize("runner", ["inprocess", "xdist"])
def test_a_record_hook_sees_plain_data_and_its_fields_are_stored(pytester: pytest.Pytester, runner: str) -> None:
    shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", pytester.path / "A1.toml")
    args = ["A1.toml", "--model", "oracle", "--instances", "i0", "-p", "no:cacheprovider", "--agentfloor-report",
            "none"]
    if runner == "xdist":
        args += ["-n", "2"]
    plain = pytester.runpytest(*args, "--agentfloor-report-dir", "plain")
    assert plain.ret == pytest.ExitCode.OK
    pytester.makeconftest(CONFTEST)
    hooked = pytester.runpytest(*args, "--agentfloor-report-dir", "hooked")
    assert hooked.ret == pytest.ExitCode.OK, hooked.outlines[-20:]
    before, after = _lines(pytester.path / "plain"), _lines(pytester.path / "hooked")
    assert before.keys() == after.keys() and len(before) == 5
    for nodeid, record in after.items():
        assert record.pop("team") == "ops"
        assert record.pop("first_tool") == before[nodeid]["trajectory"]["turns"][0]["calls"][0]["name"]
        timing = ("wall_s", "latency_s", "busy_s", "queue_s")
        same = {k: v for k, v in record.items() if k not in timing and k != "trajectory"}
        assert same == {k: v for k, v in before[nodeid].items() if k not in timing and k != "trajectory"}
        assert record["trajectory"]["messages"] == before[nodeid]["trajectory"]["messages"]
