"""Each repair quantity end to end (pytester): scripted policies built to respond to one repair each
run in arms (--agentfloor-arms), and summary.json, report.md and report.html carry the repair table,
the switch comparison, the repeats, the cap sweep and the frontier with the values worked out by hand.

* workflow_shy skips dependent reads unless the workflow prompt asks it to check (W layer);
* menu_shy spends more than the frozen cap reading a menu of 128 schemas on 11 of 12 families:
  the router (narrowed before the first request) and a sixteenfold cap both rescue it (R layer and
  the cap sweep);
* guide_shy gives up on compact and typed records unless the interface guide explains them or
  canonical delivery hands it raw ones (D layer);
* every model-run loop meets the episode budget on the 30-call frontier; the controller, reading
  the public handoffs, does not (frontier layer, with canonical delivery as its control).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
MODELS = """
[models.oracle]
provider = "scripted"
policy = "oracle"
[models.shy]
provider = "scripted"
policy = "menu_shy"
[models.wshy]
provider = "scripted"
policy = "workflow_shy"
[models.gshy]
provider = "scripted"
policy = "guide_shy"
"""
TBB = ["--agentfloor-protocol", "tbb", "-p", "no:randomly"]


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "pressure", pytester.path / "cases" / "pressure")
    pytester.makefile(".toml", models=MODELS)
    return pytester


def section(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / "reports" / "summary.json").read_text())["pressure_repairs"]


def layer(s: dict[str, Any], repair: str) -> dict[str, Any]:
    return next(r for r in s["layers"] if r["repair"] == repair)


def test_workflow_prompt_quantities_repeats_and_the_arms_names(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/pressure/accounting.toml", "--model", "wshy", "--agentfloor-arms",
                             "none,workflow_prompt", "-m", "V8 and raw and fixed and (Wlow or Whigh)",
                             "--agentfloor-runs", "3", *TBB)
    result.assert_outcomes(passed=3 * 3 * 3, failed=3 * 3)  # the plain arm fails W high in every family
    result.stdout.fnmatch_lines(["*deviation from the protocol: repair workflow_prompt (wshy+workflow_prompt)*"])
    recs = [json.loads(x) for x in (bench.path / "reports" / "runs.jsonl").read_text().splitlines()]
    assert any(r["nodeid"].endswith("::overdue-invoice[V8-high-raw-fixed-r2-wshy+workflow_prompt]") for r in recs)
    assert {r["model"]: r["config"].get("repairs") for r in recs} == {"wshy": None,
                                                                      "wshy+workflow_prompt": ["workflow_prompt"]}
    s = section(bench)
    assert s["configs"] == ["wshy"] and s["arms"] == ["none", "workflow_prompt"]
    w = layer(s, "workflow_prompt")
    # low workflow passes with or without the prompt, high passes only with it: 100 / 100 / 100 pp
    assert (w["layer"], w["L"]["pp"], w["gamma"]["pp"], w["sigma"]["pp"]) == ("W", 100.0, 100.0, 100.0)
    assert w["L"]["units"] == 3 and w["L"]["clusters"] == 3 and w["p_iut"] == pytest.approx(1 / 8)
    assert not w["active"]  # three families can never certify (2^-3 > 5%)
    rep = {r["arm"]: r for r in s["repeats"]["rows"]}
    assert rep["none"]["groups"] == 6 and rep["none"]["pass_at_1"] == 0.5 and rep["none"]["disagreement"] == 0
    assert rep["workflow_prompt"]["all_runs"] == 1 and s["repeats"]["gains"][0]["pp"] == 100
    md = (bench.path / "reports" / "report.md").read_text()
    assert "# Repairs, switches, the cap sweep and the workflow frontier" in md and "Sentinel repeats" in md
    assert "Deviation from the protocol: repair workflow_prompt (wshy+workflow_prompt)" in md.split("\n## ")[0]


def test_router_and_cap_sweep_rescue_the_menu_shy_policy_and_are_compared_with_a_switch(
        bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/pressure", "--model", "shy,oracle", "--agentfloor-arms", "none,router,cap16",
                             "-m", "fixed and (V8 or V128) and Wlow and (raw or linked)", *TBB)
    assert result.ret == 1  # shy's plain arm fails 11 families' V=128 cells
    s = section(bench)
    r = layer(s, "router")
    # units (configuration, family, W, D): shy loses V=128 in 11 of 12 families, the oracle in none
    for q in ("L", "gamma", "sigma"):
        assert r[q]["pp"] == pytest.approx(100 * 11 / 24, abs=1e-6)
    assert r["L"]["clusters"] == 12 and r["active"]  # one layer tested, 12 families: p = 2^-11
    sweep = {row["config"]: row for row in s["cap_sweep"]["rows"]}
    shy = sweep["shy"]
    assert (shy["stratum"], shy["check"], shy["truncated_high"]) == ("B", True, 0)
    assert shy["truncated_low"] == pytest.approx(11 / 12, abs=1e-6)  # summary.json keeps six decimals
    assert shy["low"]["pp"] == pytest.approx(-100 * 11 / 12, abs=1e-6) and shy["high"]["pp"] == 0
    assert shy["interaction"]["pp"] == pytest.approx(100 * 11 / 12, abs=1e-6) and shy["interaction"]["clears_margin"]
    assert sweep["oracle"]["stratum"] == "N" and [st["stratum"] for st in s["cap_sweep"]["strata"]] == ["B", "N"]
    sw = {(row["incumbent"], row["repair"]): row for row in s["switches"]["rows"]}
    vs = sw[("shy", "router")]["versus"][0]
    assert vs["switch"] == "oracle" and vs["success_pp"] == 0 and not vs["cost_known"]  # the oracle is unpriced
    assert not sw[("shy", "router")]["success_superior"]
    assert s["switches"]["counts"]["router"]["of"] == 2
    head = (bench.path / "reports" / "report.md").read_text().split("\n## ")[0]
    assert "completion cap x16 = 16,384 tokens (oracle+cap16, shy+cap16)" in head
    assert "repair router (oracle+router, shy+router)" in head
    # the capacity section reads the frozen harness only, and says what it left out
    cap = json.loads((bench.path / "reports" / "summary.json").read_text())["pressure"]
    assert cap["arm_records_left_out"] == 2 * 12 * 4 * 2


def test_interface_guide_and_canonical_delivery_rescue_the_guide_shy_policy(bench: pytest.Pytester) -> None:
    bench.runpytest("cases/pressure/email.toml", "--model", "gshy", "--agentfloor-arms",
                    "none,interface_guide,canonical_delivery", "-m", "V8 and Wlow and fixed", *TBB)
    recs = [json.loads(x) for x in (bench.path / "reports" / "runs.jsonl").read_text().splitlines()]
    assert {(r["facets"]["D"], r["passed"]) for r in recs if r["model"] == "gshy"} == {
        ("raw", True), ("linked", True), ("compact", False), ("typed", False)}
    assert all(r["passed"] for r in recs if r["model"] != "gshy")  # both repairs rescue it
    d = layer(section(bench), "interface_guide")
    # unstressed raw passes; stressed: compact and typed fail, linked passes -> 2/3 lost, all rescued
    assert d["layer"] == "D"
    for q in ("L", "gamma", "sigma"):
        assert d[q]["pp"] == pytest.approx(200 / 3, abs=1e-6)
    canonical = next(r for r in recs if r["model"] == "gshy+canonical_delivery" and r["facets"]["D"] == "typed")
    tool = [m for m in canonical["trajectory"]["messages"] if m["role"] == "tool"]
    assert tool and all('"type": "object"' not in m["content"] for m in tool)  # delivered raw


def test_the_controller_on_the_frontier_with_its_wrong_layer_control(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/pressure/frontier.toml", "--model", "oracle", "--agentfloor-arms",
                             "none,controller,canonical_delivery", *TBB)
    result.assert_outcomes(passed=4 * 4 * 3 - 2 * 4, failed=2 * 4)  # the 30-call cells of the two loop arms
    s = section(bench)
    c, control = layer(s, "controller"), layer(s, "canonical_delivery")
    assert (c["layer"], c["L"]["pp"], c["gamma"]["pp"], c["sigma"]["pp"], c["delta"]["pp"]) == (
        "W (frontier)", 100.0, 100.0, 100.0, 100.0)
    assert c["best_other"] == "canonical_delivery" and (control["gamma"]["pp"], control["sigma"]["pp"]) == (0, 0)
    assert c["p_iut"] == pytest.approx(1 / 16) and not c["active"]  # four frontier families cannot certify
    rows = {(r["arm"], r["calls"]): r for r in s["frontier"]["rows"]}
    loop = rows[("none", 30)]
    assert loop["endings"]["token_budget"] == 4 and loop["success"] == 0 and loop["median_calls"] < 30
    assert rows[("none", 14)]["success"] == 1 and rows[("none", 30)]["change_from_2"]["pp"] == -100
    ctrl = rows[("controller", 30)]
    assert ctrl["success"] == 1 and ctrl["median_requests"] == 2 and ctrl["median_controller_calls"] == 28
    html = (bench.path / "reports" / "report.html").read_text()
    part = html.split('id="pressure_repairs"')[1]
    assert "<svg" in part and "how frontier episodes ended" in part and "token_budget" in part
    md = (bench.path / "reports" / "report.md").read_text()
    assert "Workflow frontier: success and the limit that fired" in md


@pytest.mark.slow
def test_the_viewer_filters_by_repair_and_pressure_level(bench: pytest.Pytester) -> None:
    """Headless Chromium: the repair and pressure-level filters keep the runs that hold them."""
    from tests.viewer.browser import launch, playwright_api

    bench.runpytest("cases/pressure/email.toml", "--model", "gshy", "--agentfloor-arms", "none,interface_guide",
                    "-m", "V8 and Wlow and fixed", "--agentfloor-report", "all", *TBB)
    page_file = bench.path / "reports" / "viewer.html"
    sync_api = playwright_api()
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(page_file.as_uri())
            page.wait_for_selector("body[data-ready]")
            assert page.inner_text("#count").startswith("24 of 24")  # 3 families x 4 encodings x 2 arms
            assert page.inner_text("header p.deviation") \
                == "Deviation from the protocol: repair interface_guide (gshy+interface_guide)"
            page.select_option("#f-repair", "interface_guide")
            assert page.inner_text("#count").startswith("12 of 24") and "repair=interface_guide" in page.url
            page.select_option("#f-level", "typed")  # one token of "V8 Wlow typed fixed"
            assert page.inner_text("#count").startswith("3 of 24") and "level=typed" in page.url
            assert all("gshy+interface_guide" in t for t in page.locator("#list tbody tr").all_inner_texts())
            chips = page.locator("#chips .chip").all_inner_texts()
            assert any(c.startswith("pressure level: typed") for c in chips)
            options = page.locator("#f-level option").all_inner_texts()
            assert any(o.startswith("V8 (24)") for o in options) and any(o.startswith("compact (6)") for o in options)
        finally:
            browser.close()


def test_the_viewer_header_names_the_deviations() -> None:
    """viewer.html is a report file too: its header names the repairs and raised caps, as report.md does."""
    from pytest_agentfloor.report.viewer import render_viewer
    from tests.readback import unpacked

    def rec(model: str, config: dict[str, Any]) -> dict[str, Any]:
        return {"model": model, "tier": "C", "task": "t", "variant": "v", "instance": "i", "run": 0, "passed": True,
                "config": {"provider": "scripted", **config}, "trajectory": {"messages": [], "turns": []}}

    plain = render_viewer([("s", [rec("m", {"max_tokens": 1024})])])
    assert 'class="deviation"' not in plain
    page = render_viewer([("s", iter([rec("m", {"max_tokens": 1024}), rec("m+router+cap16", {
        "repairs": ["router"], "cap_scale": 16, "max_tokens": 16384})]))])
    head = unpacked(page).split("</header>")[0]
    assert ("Deviation from the protocol: repair router (m+router+cap16); completion cap x16 = 16,384 tokens "
            "(m+router+cap16)") in head
