"""Pressure cells through real pytest runs (pytester): ids, markers, records, the report section."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PRESSURE = REPO / "cases" / "pressure"
MODELS = """
[models.oracle]
provider = "scripted"
policy = "oracle"
[models.shy]
provider = "scripted"
policy = "menu_shy"
"""


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # subprocesses (the report and regrade commands, xdist) import this checkout, not an installed copy
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    shutil.copytree(PRESSURE, pytester.path / "cases" / "pressure")
    pytester.makefile(".toml", models=MODELS)
    return pytester


def records(pytester: pytest.Pytester) -> list[dict]:
    return [json.loads(line) for line in (pytester.path / "reports" / "runs.jsonl").read_text().splitlines()]


def test_ids_and_markers_carry_family_intent_and_cell(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/pressure", "--model", "oracle", "-m", "V128 and raw and Whigh and routed",
                             "--co", "-q", "--strict-markers")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert len(ids) == 12
    assert "cases/pressure/accounting.toml::overdue-invoice[V128-high-raw-routed-r0-oracle]" in ids
    result = bench.runpytest("cases/pressure", "--model", "oracle", "-m", "calendar and leave-overlap", "--co", "-q")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert len(ids) == 50 and all("::leave-overlap[" in i for i in ids)
    result = bench.runpytest("cases/pressure", "--model", "oracle", "--co", "-q")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert len(ids) == 12 * 50 + 4 * 4  # and the frontier: four families of 2, 6, 14 and 30 calls
    assert "cases/pressure/frontier.toml::close-trail[calls30-fixed-r0-oracle]" in ids
    result = bench.runpytest("cases/pressure", "--model", "oracle", "-m", "frontier and calls14", "--co", "-q")
    assert len([line for line in result.stdout.lines if "::" in line]) == 4


@pytest.mark.slow
def test_menu_shy_policy_gives_a_negative_menu_contrast_and_nothing_else(bench: pytest.Pytester) -> None:
    """A scripted policy that fails only under large menus: V is negative and significant, the
    other seven contrasts are zero and not significant; the report shows the section."""
    result = bench.runpytest("cases/pressure", "--model", "oracle", "--model", "shy", "--agentfloor-protocol", "tbb",
                             "-m", "fixed or routed", "-p", "no:randomly")
    recs = records(bench)
    assert len(recs) == 2 * 12 * 50
    oracle = [r for r in recs if r["model"] == "oracle"]
    assert all(r["passed"] and r["kind"] == "pressure" for r in oracle)
    shy_failed = [r for r in recs if r["model"] == "shy" and not r["passed"]]
    assert shy_failed and all(r["facets"]["V"] == 128 and r["terminal_flag"] == "truncation" for r in shy_failed)
    r = next(x for x in recs if x["task"] == "overdue-invoice" and x["variant"] == "V32-low-compact"
             and x["instance"] == "routed" and x["model"] == "oracle")
    assert r["facets"]["cell"] == "V32-low-compact" and r["facets"]["intent"] == "accounting"
    assert r["facets"]["exposures"] == 32 + 4 * (len(r["trajectory"]["turns"]) - 1)
    result.assert_outcomes(passed=12 * 50 + (12 * 50 - len(shy_failed)), failed=len(shy_failed))

    summary = json.loads((bench.path / "reports" / "summary.json").read_text())
    s = summary["pressure"]
    assert s["primary_lane"] == "routed"
    for lane in ("routed", "fixed"):
        rows = {c["contrast"]: c for c in s["contrasts"][lane]}
        v = rows["V"]
        # 11 of 12 families lose every V=128 cell for shy, none for the oracle: units are (model, family)
        assert v["pp"] == pytest.approx(-100 * 11 / 24, abs=1e-6)
        assert v["family_hi"] < 0 and v["family_p_holm"] < 0.05
        for name, row in rows.items():
            if name != "V":
                assert row["pp"] == 0 and row["family_p_holm"] == 1 and row["signflip_p_holm"] == 1
    tr = s["truncation"]["fixed"]
    assert tr["per_V"]["128"]["truncated"] == 11 * 8 and tr["per_V"]["8"]["truncated"] == 0
    assert tr["pp_lost_in_truncated"] == pytest.approx(tr["pp_lost"])
    assert s["lanes"]["routed_minus_fixed_pp"] == 0 and s["lanes"]["fixed_extra_exposures"] > 0
    md = (bench.path / "reports" / "report.md").read_text()
    html = (bench.path / "reports" / "report.html").read_text()
    assert "# Controlled pressures" in md and "V 128-8" in md
    assert 'id="pressure"' in html and "<svg" in html.split('id="pressure"')[1]
    # the offline report command rebuilds the same section from runs.jsonl
    out = bench.run(sys.executable, "-m", "pytest_agentfloor", "report", str(bench.path / "reports" / "runs.jsonl"),
                    "--out", str(bench.path / "offline"))
    assert out.ret == 0, out.stderr.str()
    offline = json.loads((bench.path / "offline" / "summary.json").read_text())
    assert offline["pressure"] == summary["pressure"]
    # re-grading the stored trajectories against the current compilation changes nothing
    out = bench.run(sys.executable, "-m", "pytest_agentfloor", "regrade", str(bench.path / "reports" / "runs.jsonl"),
                    "--cases", str(bench.path / "cases"))
    assert out.ret == 0 and f"re-graded {len(recs)} record(s): 0 outcome(s) changed" in out.stdout.str()
    assert "regrade:" not in out.stderr.str()


@pytest.mark.slow
def test_xdist_gives_the_same_pressure_section(bench: pytest.Pytester) -> None:
    args = ["cases/pressure", "--model", "oracle", "--model", "shy", "--agentfloor-protocol", "tbb",
            "-m", "overdue-invoice or phishing-report or retention-delete", "-p", "no:randomly"]
    bench.runpytest(*args, "-n", "0")
    serial = json.loads((bench.path / "reports" / "summary.json").read_text())["pressure"]
    shutil.rmtree(bench.path / "reports")
    result = bench.runpytest_subprocess(*args, "-n", "2")
    assert result.ret == 1  # shy fails its large-menu cells
    parallel = json.loads((bench.path / "reports" / "summary.json").read_text())["pressure"]
    assert parallel == serial and serial["episodes"] == 2 * 3 * 50
