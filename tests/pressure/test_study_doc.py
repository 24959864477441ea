"""The real study's figures in docs/pressures.md ("A real study") are re-derived from its records
(docs/examples/pressure-study/*.jsonl), offline: the doc cannot drift from what was measured."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pytest_agentfloor.pressure.repairs.records import runs
from pytest_agentfloor.pressure.repairs.summary import summarise

REPO = Path(__file__).resolve().parents[2]
STUDY = REPO / "docs" / "examples" / "pressure-study"
DOC = (REPO / "docs" / "pressures.md").read_text()
RECORDS = [json.loads(line) for name in ("capacity", "frontier") for line in (STUDY / f"{name}.jsonl").open()]


def test_the_outcome_table() -> None:
    rs = runs(RECORDS)
    local = [r for r in rs if r.config == "local"]
    assert len(local) == 32 and not any(r.success for r in local)
    cap = Counter(r.termination for r in local if not r.frontier)
    assert cap == {"infeasible": 16}
    assert all(rec["first_unmet"] == "S" for rec in RECORDS if rec["model"].startswith("local"))
    front = Counter((r.termination, r.model_calls == 0) for r in local if r.frontier)
    assert front == {("truncated", True): 8, ("infeasible", False): 8}
    ctrl = [rec for rec in RECORDS if rec["model"] == "local+controller"]
    assert ctrl and all(set(rec["trajectory"]["controller_stops"]) <= {"absent"} for rec in ctrl)
    assert not any(rec["facets"].get("controller_calls") for rec in ctrl)
    scripted = [r for r in rs if r.config != "local"]
    assert (len(scripted), sum(r.success for r in scripted)) == (48, 44)
    assert "| oracle, fault-workflow_shy | as above | all | 44 / 48 |" in DOC


def test_the_repair_and_policy_figures() -> None:
    s = summarise(RECORDS)
    (w,) = s["layers"]
    assert (w["layer"], w["repair"], w["L"]["clusters"]) == ("W", "workflow_prompt", 4)
    assert [round(w[q]["pp"], 1) for q in ("L", "gamma", "sigma")] == [33.3, 33.3, 33.3]
    assert w["p_iut"] == pytest.approx(1 / 16) and not w["active"]
    assert {c: [b[q]["pp"] for q in ("L", "gamma", "sigma")] for c, b in w["by_config"].items()} == {
        "fault-workflow_shy": [100.0, 100.0, 100.0], "local": [0.0, 0.0, 0.0], "oracle": [0.0, 0.0, 0.0]}
    pol = {r["action"]: (r["probe_failed"], r["recovered"]) for r in s["policy"] if r["incumbent"] == "local"}
    assert pol == {"workflow_prompt": (8, 0), "controller": (8, 0), "switch to fault-workflow_shy": (8, 4),
                   "switch to oracle": (16, 16)}
    assert "the workflow prompt recovers 0 of 8 failed probes and the controller 0 of 8" in DOC
