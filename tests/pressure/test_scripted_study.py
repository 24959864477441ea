"""The scripted study in docs/pressures.md ("The scripted policies over the capacity factorial and
the frontier"): its two commands run as written, in a scratch copy of cases/pressure importing this
checkout, and every figure the section quotes is re-derived from the report files they write
(summary.json, report.md, runs.jsonl), so the section cannot drift from what the harness reports.

The whole capacity command takes about a minute on the shared machine, so it runs under `slow`
(which .ci/run runs); by default one file of it (3 of the 12 families) checks what does not depend
on the number of families: each repair's gain comes from the one policy built to respond to it, and
three families cannot activate anything."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "pressures.md").read_text()
SECTION = DOC.split("## The scripted policies over the capacity factorial and the frontier", 1)[1].split("\n## ", 1)[0]
PROSE = " ".join(SECTION.split())
CAPACITY, FRONTIER = re.search(r"```\n(.*?)```", SECTION, re.S).group(1).strip().splitlines()  # type: ignore[union-attr]
TARGET = {"router": "fault-menu_shy", "workflow_prompt": "fault-workflow_shy", "interface_guide": "fault-guide_shy"}


@dataclass
class Study:
    summary: dict[str, Any]  # summary.json's pressure_repairs
    report: str  # report.md
    records: list[dict[str, Any]]  # runs.jsonl


def run_documented(cmd: str, root: Path, out: Path, selection: str | None = None) -> Study:
    """Run a documented command with this interpreter; only its report dir (and, for the default run,
    its case path) change."""
    words = shlex.split(cmd)
    assert words[0] == "pytest"
    words[words.index("--agentfloor-report-dir") + 1] = str(out)
    if selection:
        words[1] = selection
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("PYTEST_ADDOPTS", None)
    result = subprocess.run([sys.executable, "-m", "pytest", *words[1:], "-p", "no:cacheprovider", "-q"], cwd=root,
                            env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]  # the fault policies fail: a measurement
    return Study(json.loads((out / "summary.json").read_text())["pressure_repairs"], (out / "report.md").read_text(),
                 [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()])


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scripted-study")
    shutil.copytree(REPO / "cases" / "pressure", root / "cases" / "pressure")
    return root


@pytest.fixture(scope="module")
def frontier(root: Path) -> Study:
    return run_documented(FRONTIER, root, root / "frontier")


@pytest.fixture(scope="module")
def capacity(root: Path) -> Study:
    return run_documented(CAPACITY, root, root / "capacity")


@pytest.fixture(scope="module")
def one_file(root: Path) -> Study:
    return run_documented(CAPACITY, root, root / "one-file", selection="cases/pressure/accounting.toml")


def tables() -> dict[str, list[list[str]]]:
    """The section's markdown tables by their first header cell: rows of cells."""
    out: dict[str, list[list[str]]] = {}
    for block in re.findall(r"(?:^\|.*\|\n)+", SECTION, re.M):
        lines = [[c.strip() for c in line.strip().strip("|").split("|")] for line in block.splitlines()]
        out[lines[0][0]] = [row for row in lines[2:]]
    return out


def row(table: str, *keys: str) -> list[str]:
    """The row whose leading cells list each key (a cell may list several, comma-separated)."""
    for cells in tables()[table]:
        if all(key in re.split(r",\s*", cell) for key, cell in zip(keys, cells)):
            return cells
    raise AssertionError(f"docs/pressures.md: no row {keys} in the table {table!r}")


def signed(pp: float) -> str:
    return "0.0" if round(pp, 1) == 0 else f"{pp:+.1f}"


def interval(q: dict[str, Any]) -> str:
    return signed(q["pp"]) if q["lo"] == q["hi"] else f"{signed(q['pp'])} [{signed(q['lo'])}, {signed(q['hi'])}]"


def power_of_two(p: float) -> str:
    if p == 1:
        return "1"
    k = round(-math.log2(p))
    assert p == pytest.approx(2.0 ** -k, rel=1e-5), p
    return f"2^-{k}"


def check_repair_rows(study: Study, layers: int) -> None:
    assert len(study.summary["layers"]) == layers
    for layer in study.summary["layers"]:
        cells = row("layer", layer["layer"], layer["repair"])
        quantities = [layer[q] for q in ("L", "gamma", "sigma", "delta")]
        assert cells[2:6] == [interval(quantities[0]), signed(quantities[1]["pp"]), signed(quantities[2]["pp"]),
                              f"{signed(quantities[3]['pp'])} ({layer['best_other']})"]
        # the router's four quantities share the interval shown; every other interval is a point
        assert all(q["lo"] == q["hi"] for q in quantities) or all(
            (q["lo"], q["hi"]) == (quantities[0]["lo"], quantities[0]["hi"]) for q in quantities)
        assert cells[6] == power_of_two(layer["p_iut"])
        assert cells[7] == ("yes" if layer["active"] else f"no (Holm {layer['p_holm']:g})" if layer["p_holm"] < 1 else "no")
        moved = {c: [signed(b[q]["pp"]) for q in ("L", "gamma", "sigma")] for c, b in sorted(layer["by_config"].items())}
        text = "; ".join(f"{c} {' / '.join(v)}" for c, v in moved.items() if v != ["0.0"] * 3)
        assert cells[8] == text + ("; the others 0" if len(text.split("; ")) < len(moved) else "")
        assert f"| {layer['layer']} | {layer['repair']} |" in study.report


ACTIONS = {"switch to the oracle": "switch to oracle", "switch": "switch to oracle"}


def check_probe_row(study: Study, incumbent: str, label: str) -> None:
    policy = {p["action"]: p for p in study.summary["policy"] if p["incumbent"] == incumbent}
    cells = row("probe, then act (incumbent)", label)
    (failed,) = {(p["probe_failed"], p["blocks"]) for p in policy.values()}
    assert cells[1] == f"{failed[0]} of {failed[1]}"
    for group in cells[2].split("; "):
        items = group.split(", ")
        if all(re.search(r" \d+$", item) for item in items):  # "router 88, cap16 88": a count each
            pairs = [item.rsplit(" ", 1) for item in items]
        else:  # "workflow prompt, interface guide 0": one count for the list
            name, count = items[-1].rsplit(" ", 1)
            pairs = [[item, count] for item in (*items[:-1], name)]
        for name, count in pairs:
            assert policy[ACTIONS.get(name, name.replace(" ", "_"))]["recovered"] == int(count), (label, name)
    for item in cells[3].split(", "):
        name, figure = re.match(r"(.*) ([\d.]+) M$", item).groups()  # type: ignore[union-attr]
        assert f"{policy[ACTIONS.get(name, name.replace(' ', '_'))]['tokens_per_1000_with_probe'] / 1e6:.1f}" == figure


ENDED = {"token_budget": "the episode budget", "other": "other"}


def test_the_frontier_figures(frontier: Study) -> None:
    assert len(frontier.records) == 96
    check_repair_rows(frontier, layers=2)
    check_probe_row(frontier, "fault-workflow_shy", "fault-workflow_shy (frontier)")
    rows = {(r["config"], r["arm"], r["calls"]): r for r in frontier.summary["frontier"]["rows"]}
    assert {r["calls"] for r in rows.values()} == {2, 6, 14, 30}
    for config, arm, _ in rows:
        cells = row("frontier (4 families)", config, arm)
        assert cells[2:5] == [f"{round(rows[config, arm, n]['success'] * 4)}/4" for n in (2, 6, 14)]
        last = rows[config, arm, 30]
        assert last["episodes"] == 4
        ended = {k: v for k, v in last["endings"].items() if v and k != "passed"}
        (ending,) = ended or {"passed": 4}
        want = "4/4 passed" if last["success"] == 1 else f"0/4: {ENDED[ending]} ({ended[ending]})"
        assert cells[5] == want or cells[5].startswith(want + ", ")
        assert cells[6] == f"{last['median_calls']:.0f}, {last['median_requests']:.0f}, {last['median_tokens']:,.0f}"
    # 'other' at 30 calls is a submission after 3 calls with the workflow obligation (P) unmet
    assert "other (4), submitted after 3 calls with the workflow obligation P unmet" in SECTION
    others = [r for r in frontier.records if r["facets"]["cell"] == "calls30" and r["model"].startswith("fault-workflow_shy")
              and not r["passed"]]
    assert len(others) == 8 and {(r["termination"], r["first_unmet"], r["calls"]) for r in others} == {("submitted", "P", 3)}
    budget = [r for r in frontier.records if r["facets"]["cell"] == "calls30" and not r["passed"]
              and r["model"].startswith("oracle")]
    assert {r["termination"] for r in budget} == {"token_budget"} and budget[0]["protocol_params"]["token_budget"] == 128000
    assert "in 2 model requests instead of 23" in PROSE
    (control,) = [layer for layer in frontier.summary["layers"] if layer["repair"] == "controller"]
    assert control["p_iut"] == pytest.approx(1 / 16) and control["p_holm"] == pytest.approx(0.125)
    assert "put every one-sided p at 1/16 or above, so Holm over the controller and its control leaves 0.125" in PROSE


def test_one_file_of_the_capacity_command_attributes_each_repair(one_file: Study) -> None:
    """Three families: each repair still gains only on the policy that fails its layer, recovers only
    that policy's failed probes (with the oracle switch and, for the menu, the larger cap), and the
    sign-flip floor 2^-3 keeps every layer from activating."""
    assert len(one_file.records) == 960
    for layer in one_file.summary["layers"]:
        gains = {c for c, b in layer["by_config"].items() if b["gamma"]["pp"] or b["sigma"]["pp"]}
        assert gains == {TARGET[layer["repair"]]}
        assert layer["p_iut"] == pytest.approx(1 / 8) and not layer["active"]
    for incumbent in TARGET.values():
        policy = {p["action"]: p for p in one_file.summary["policy"] if p["incumbent"] == incumbent}
        fixes = {"switch to oracle", *(r for r, c in TARGET.items() if c == incumbent)}
        if incumbent == "fault-menu_shy":
            fixes.add("cap16")
        for action in ("switch to oracle", "cap16", *TARGET):
            assert policy[action]["probe_failed"] > 0
            assert policy[action]["recovered"] == (policy[action]["probe_failed"] if action in fixes else 0), (incumbent, action)
    strata = {r["config"]: (r["stratum"], r["check"], r["interaction"]["clears_margin"]) for r in one_file.summary["cap_sweep"]["rows"]}
    assert strata == {"fault-menu_shy": ("B", True, False), "oracle": ("N", True, False),
                      "fault-workflow_shy": ("N", True, False), "fault-guide_shy": ("N", True, False)}


@pytest.mark.slow
def test_the_capacity_figures(capacity: Study) -> None:
    assert len(capacity.records) == 3840 and "3,840 and 96 episodes" in PROSE
    check_repair_rows(capacity, layers=3)
    assert {layer["L"]["clusters"] for layer in capacity.summary["layers"]} == {12}
    for incumbent in TARGET.values():
        check_probe_row(capacity, incumbent, incumbent)
    sweep = capacity.summary["cap_sweep"]
    assert sweep["margin_pp"] == 5.0 and {r["scale"] for r in sweep["rows"]} == {16}
    assert {r["protocol_params"]["completion_cap"] for r in capacity.records} == {1024}
    for r in sweep["rows"]:
        cells = row("cap sweep (V=128, fixed lane)", r["config"])
        assert cells[1:] == [r["stratum"], f"{100 * r['truncated_low']:.1f}% / {100 * r['truncated_high']:.1f}%",
                             "pass" if r["check"] else "fail", signed(r["low"]["pp"]), signed(r["high"]["pp"]),
                             interval(r["interaction"]), "yes" if r["interaction"]["clears_margin"] else "no"]
    assert {c for cells in tables()["cap sweep (V=128, fixed lane)"] for c in cells[0].split(", ")} == {
        r["config"] for r in sweep["rows"]}
    menu = next(r for r in sweep["rows"] if r["config"] == "fault-menu_shy")
    assert f"interaction {signed(menu['interaction']['pp'])} pp" in PROSE
    menu_policy = {p["action"]: p for p in capacity.summary["policy"] if p["incumbent"] == "fault-menu_shy"}
    assert menu_policy["router"]["recovered"] == menu_policy["cap16"]["recovered"] == menu_policy["router"]["probe_failed"]
    assert f"recover all {menu_policy['router']['probe_failed']} failed probes" in PROSE
    counts = capacity.summary["switches"]["counts"]
    assert {(c["success_superior"], c["of"]) for c in counts.values()} == {(1, 4)}
    assert {r["incumbent"] for r in capacity.summary["switches"]["rows"] if r["success_superior"]} == {"oracle"}
    assert "each repair success-superior for 1 of its 4 incumbents, the oracle" in PROSE
