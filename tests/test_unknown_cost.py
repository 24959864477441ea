"""An unpriced model's cost is unknown wherever a cost is printed (plan, progress, judge, call sites),
never $0; a priced model whose usage is 0 really costs $0 and says so (issue 34, point 6)."""

from __future__ import annotations

import re
import shutil
from types import SimpleNamespace

import pytest

from pytest_agentfloor.callsite.stats import summarise
from pytest_agentfloor.callsite.tables import accuracy_table, routing_table
from pytest_agentfloor.progress import ModelProgress, Progress, live_parts, progress_line
from pytest_agentfloor.report.tables import judge_line, judge_table
from pytest_agentfloor.stats.judge import compute_judge
from tests.viewer.conftest import REPO

MODELS = """
[models.unpriced]
provider = "scripted"
policy = "oracle"

[models.free]
provider = "scripted"
policy = "oracle"
pricing = { input_per_mtok = 0 }
"""


def test_plan_says_unknown_for_an_unpriced_model_and_0_for_a_free_one(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    pytester.makefile(".toml", models=MODELS)
    first = pytester.runpytest("cases", "--model", "unpriced,free", "--instances", "i0", "-p", "no:cacheprovider",
                               "--agentfloor-report", "none")
    assert first.ret == 0, first.stdout.str()[-2000:]
    plan = pytester.runpytest("cases", "--model", "unpriced,free", "--instances", "i0", "--agentfloor-plan",
                              "-p", "no:cacheprovider")
    assert plan.ret == 0
    out = plan.stdout.str()
    assert re.search(r"^unpriced\s+A\s+\d+\s+\d+\s+\d+\s+unknown\s", out, re.M), out
    assert re.search(r"^free\s+A\s+\d+\s+\d+\s+\d+\s+\$0\.0000\s", out, re.M), out  # priced, nothing spent
    assert re.search(r"^total\s+\d+\s+\d+\s+\d+\s+unknown\s", out, re.M), out  # a total without it would lie
    assert "earlier runs of unpriced carry no cost" in out and "of free carry" not in out


def _report(nodeid: str, cost: float | None) -> SimpleNamespace:
    """A call report as plugin.pytest_runtest_makereport leaves it: the phase's compact records on it."""
    return SimpleNamespace(nodeid=nodeid, when="call", passed=True, skipped=False, failed=False,
                           agentfloor_records=[{"tokens_in": 10, "tokens_out": 2, "turns": 1, "cost_usd": cost}])


def _progress() -> Progress:
    config = SimpleNamespace(pluginmanager=SimpleNamespace(getplugin=lambda name: None), option=SimpleNamespace())
    progress = Progress(config, style="plain", interval=60.0)  # type: ignore[arg-type]
    progress.display = "lines"
    return progress


def test_progress_cost_unknown_from_reports_and_zero_when_priced() -> None:
    progress = _progress()
    for i in range(3):
        # an unknown cost is null in the record
        progress.pytest_runtest_logreport(_report(f"cases/tier_A/A1.toml::A1[v0-i{i}-r0-unpriced]", None))
        progress.pytest_runtest_logreport(_report(f"cases/tier_A/A1.toml::A1[v0-i{i}-r0-free]", 0.0))
        progress.pytest_runtest_logreport(_report(f"cases/tier_A/A1.toml::A1[v0-i{i}-r0-paid]", 0.25))
    lines = dict(zip(progress.models, progress.lines(200)))
    assert "| cost unknown |" in lines["unpriced"] and "$" not in lines["unpriced"]
    assert "| $0.0000 |" in lines["free"]
    assert "| $0.7500 |" in lines["paid"]
    live = "".join(t for t, _ in live_parts("unpriced", progress.models["unpriced"], 1.0))
    assert "| cost unknown |" in live and "$" not in live


def test_progress_cost_unknown_before_any_report_for_an_unpriced_model() -> None:
    """The controller knows from models.toml that a model has no price: unknown from the start."""
    assert "cost unknown" in progress_line("m", ModelProgress(total=4, priced=False), 1.0)
    assert "$0.0000" in progress_line("m", ModelProgress(total=4, priced=True), 1.0)
    # runs of an unpriced model that carry a recorded cost (providers/recorded.py): that cost is shown
    assert "$0.1000" in progress_line("m", ModelProgress(total=4, priced=False, cost_usd=0.1, costed=1), 1.0)


def _judged(cost: float | None, model: str = "m") -> dict:
    return {"model": model, "judge_model": "j", "judge_verdicts": 1, "judge_requests": 1, "judge_cached": 0,
            "judge_cost_usd": cost, "judge_latency_s": 0.1}


@pytest.mark.parametrize(("cost", "shown"), [(None, "unknown"), (0.0, "$0"), (0.002, "$0.0020")])
def test_judge_cost_table_and_line(cost: float | None, shown: str) -> None:
    summary = SimpleNamespace(judge=compute_judge([_judged(cost)]), model_order=("m",))
    table = judge_table(summary)  # type: ignore[arg-type]
    column = table.headers.index("judge $")
    assert [row[column] for row in table.rows] == [shown, shown]
    assert f"judge cost {shown}," in judge_line(summary)  # type: ignore[arg-type]


def _rec(model: str, site: str, task: str, passed: bool, cost: float | None) -> dict:
    return {"model": model, "task": task, "tier": "callsite", "variant": "v0", "instance": "i0", "run": 0,
            "passed": passed, "infra_error": False, "tokens_in": 100, "cost_usd": cost, "kind": "callsite",
            "facets": {"site": site, "grader": site, "group": "g"}}


def _site(model: str, site: str, outcomes: list[bool], cost: float | None) -> list[dict]:
    return [_rec(model, site, f"{site}-{i:02d}", p, cost) for i, p in enumerate(outcomes)]


def test_callsite_unpriced_model_is_unknown_and_never_the_cheapest() -> None:
    # ref: hosted and priced; unpriced and free: local, equally accurate and equally large (1 B)
    recs = (_site("ref", "intent", [True] * 4, 0.01) + _site("ref", "codegen", [True] * 4, 0.10)
            + _site("unpriced", "intent", [True] * 4, None) + _site("unpriced", "codegen", [True, True, True, False], None)
            + _site("free", "intent", [True] * 4, 0.0) + _site("free", "codegen", [True, True, True, False], 0.0))
    meta = {"ref": {"hosted": True}, "unpriced": {"params_b": 1}, "free": {"params_b": 1}}
    s = summarise(recs, meta, reference="ref", margin_pp=30)
    cell = s.accuracy["intent"]["unpriced"]
    assert cell.cost_usd is None and cell.cost_per_call is None and cell.spend_share is None
    free = s.accuracy["intent"]["free"]
    assert free.cost_usd == 0.0 and free.cost_per_call == 0.0
    routes = {(r.policy, r.model): r for r in s.routing}
    # a tie on accuracy and size goes to the cheaper: the free model, never the one of unknown cost
    assert routes[("local_best_per_site", None)].assignment == {"intent": "free", "codegen": "free"}
    assert routes[("local_single", "free")].cost_per_call == 0.0
    matched = routes[("matched_reference", "ref")]
    assert matched.assignment == {"intent": "free", "codegen": "free"} and matched.cost_usd == 0.0

    acc = accuracy_table(s)
    col = {h: i for i, h in enumerate(acc.headers)}
    rows = {(r[col["site"]], r[col["model"]]): r for r in acc.rows}
    assert rows[("intent", "unpriced")][col["sweep $"]] == "unknown"
    assert rows[("intent", "unpriced")][col["$/call"]] == "unknown"
    assert rows[("intent", "free")][col["$/call"]] == "$0"

    # without the free model, the unpriced one is still not taken for free by matched_reference
    alone = summarise([r for r in recs if r["model"] != "free"], meta, reference="ref", margin_pp=30)
    by = {(r.policy, r.model): r for r in alone.routing}
    assert by[("matched_reference", "ref")].assignment == {"intent": "ref", "codegen": "ref"}
    local = by[("local_best_per_site", None)]
    assert local.cost_usd is None and local.cost_per_call is None and local.saving is None
    table = routing_table(alone)
    shown = {r[0]: r for r in table.rows}
    assert shown["all local, best per site"][2:4] == ["unknown", "unknown"]
