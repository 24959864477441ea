"""Case versions: the gate, `compare` and --resume never pair runs of a changed case file silently.

A record carries its case's content hash; a baseline recorded before a case was re-calibrated is
refused by the gate with a message naming the changed cases, unless the user allows it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_agentfloor.compare import main as compare_main
from pytest_agentfloor.gate import evaluate
from pytest_agentfloor.versions import changed_cases, refusal

REPO = Path(__file__).resolve().parents[1]
SELECT = ["--instances", "i0", "--agentfloor-runs", "2", "-p", "no:cacheprovider"]


def rec(task: str, h: str, run: int = 0, passed: bool = True) -> dict:
    return {"task": task, "variant": "v0", "instance": "i0", "run": run, "model": "m", "tier": "B",
            "passed": passed, "case_hash": h, "protocol": "agentfloor"}


def test_changed_cases_names_tasks_whose_hashes_differ() -> None:
    cand = [rec("B1", "new"), rec("B2", "same"), rec("B3", "x")]
    base = [rec("B1", "old"), rec("B2", "same"), rec("B4", "y")]
    assert changed_cases(cand, base) == ["B1"]  # B3 and B4 are on one side only: unpaired, not changed
    assert changed_cases(cand, [{"task": "B1", "variant": "v0"}]) == []  # no hash recorded: not judged
    msg = refusal(["B1", "E2"])
    assert msg.startswith("case versions differ: 2 case(s) changed since the baseline was recorded: B1, E2;")
    assert "--agentfloor-allow-changed-cases" in msg


def test_gate_evaluate_blocks_on_changed_cases_unless_allowed() -> None:
    cand = [rec("B1", "new", r) for r in range(40)] + [rec("B2", "s", r) for r in range(40)]
    base = [rec("B1", "old", r) for r in range(40)] + [rec("B2", "s", r) for r in range(40)]
    refused = evaluate(cand, base)
    assert not refused.passed and any("changed since the baseline was recorded: B1" in b for b in refused.blockers)
    allowed = evaluate(cand, base, allow_changed_cases=True)
    assert allowed.passed and any("paired despite changed case versions" in n for n in allowed.notes)


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    pytester.runpytest("cases", "--model", "oracle", *SELECT, "--agentfloor-report-dir", "baseline")
    return pytester


def _recalibrate(p: pytest.Pytester, case: str = "B2") -> None:
    path = p.path / "cases" / "tier_B" / f"{case}.toml"
    path.write_text(path.read_text() + "\n# re-calibrated\n")


def test_a_baseline_from_before_a_change_is_refused_naming_the_case(bench: pytest.Pytester) -> None:
    _recalibrate(bench)
    result = bench.runpytest("cases", "--model", "oracle", *SELECT, "--agentfloor-baseline", "baseline/runs.jsonl")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*case versions differ: 1 case(s) changed since the baseline was recorded: B2;*",
                                 "*agentfloor gate: FAILED*"])
    result = bench.runpytest("cases", "--model", "oracle", *SELECT, "--agentfloor-baseline", "baseline/runs.jsonl",
                             "--agentfloor-allow-changed-cases")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*agentfloor gate: PASSED*"])


def test_compare_leaves_changed_cases_unpaired_and_names_them(bench: pytest.Pytester,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    _recalibrate(bench)
    bench.runpytest("cases", "--model", "oracle", *SELECT, "--agentfloor-report-dir", "cand")
    base, cand = bench.path / "baseline" / "runs.jsonl", bench.path / "cand" / "runs.jsonl"
    assert compare_main([str(base), str(cand), "--n-boot", "200"]) == 1
    out = capsys.readouterr().out
    assert "not paired: case versions differ: 1 case(s) changed since the baseline was recorded: B2;" in out
    assert "--allow-changed-cases" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("B ")]
    assert rows and rows[0][1] == "40"  # B1, B3, B4, B5: 4 tasks x 5 variants x 2 runs; B2 left out
    assert compare_main([str(base), str(cand), "--n-boot", "200", "--allow-changed-cases"]) == 0
    out = capsys.readouterr().out
    assert "paired despite changed case versions: 1 case(s) changed since the baseline was recorded: B2" in out


def test_resume_names_the_changed_cases_it_runs_again(bench: pytest.Pytester) -> None:
    args = ["cases", "--model", "oracle", *SELECT, "--agentfloor-report-dir", "baseline", "--agentfloor-resume"]
    _recalibrate(bench)
    result = bench.runpytest(*args)
    result.assert_outcomes(passed=10)  # only B2's 5 variants x 2 runs run again
    result.stdout.fnmatch_lines(["*--resume: 1 case(s) changed since the resumed runs: B2; their items run again*"])
    recs = [json.loads(line) for line in (bench.path / "baseline" / "runs.jsonl").read_text().splitlines()]
    assert {r["task"] for r in recs} == {"B1", "B2", "B3", "B4", "B5"} and len(recs) == 50
