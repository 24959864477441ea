"""docs/capture.md's walk-through states figures of a real run; they are re-derived here, offline, from the
run's own files in docs/examples/home/ (captures, reviewed tables, runs.jsonl, routing.json), so the page
cannot drift from its evidence."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_agentfloor.capture.review import load_tables
from pytest_agentfloor.capture.store import call_mix
from pytest_agentfloor.report.cli import main as report_main

REPO = Path(__file__).resolve().parents[2]
HOME = REPO / "docs" / "examples" / "home"
DOC = (REPO / "docs" / "capture.md").read_text()


def test_the_committed_routing_is_the_decision_of_the_committed_records(tmp_path: Path) -> None:
    out = tmp_path / "routing.json"
    assert report_main([str(HOME / "runs.jsonl"), "--reference", "gpt-x", "--routing-out", str(out),
                        "--out", str(tmp_path / "reports")]) == 0
    assert json.loads(out.read_text()) == json.loads((HOME / "routing.json").read_text())
    assert (tmp_path / "routing.litellm.yaml").read_text() == (HOME / "routing.litellm.yaml").read_text()


def test_the_page_states_what_the_files_hold() -> None:
    doc = json.loads((HOME / "routing.json").read_text())
    sites = doc["sites"]
    moved = [s for s, e in sites.items() if e["moved"]]
    assert moved == ["router", "weather"]
    share = sum(sites[s]["weight"] for s in moved)
    assert f"two of the four call sites, {100 * share:.0f}% of the agent's calls" in DOC
    assert f"saving {100 * doc['route']['saving']:.1f}%" in DOC
    assert f"{100 * doc['route']['accuracy']:.1f}%" in DOC
    for site in moved:
        lo, hi = sites[site]["evidence"]["paired"]["difference_ci"]
        assert f"[{100 * lo:.1f}, +{100 * hi:.1f}]" in DOC
        assert sites[site]["evidence"]["paired"]["noninferior"] is False  # the page says neither move is
    # the captured call mix weighs the sites, and every table was reviewed (20 accepted, 2 edited)
    mix = call_mix(HOME / "captured")
    assert mix == {"router": 12, "timer": 4, "weather": 5, "weather_answer": 3}
    assert {s: e["calls"] for s, e in sites.items()} == mix
    states = [c["review"] for t in load_tables(HOME / "captured") for c in t.cases]
    assert states.count("accepted") == 20 and states.count("edited") == 2 and len(states) == 22
    assert "24 call(s) captured" in DOC and "22 distinct request(s)" in DOC
