"""--agentfloor-plan (no model called: asserted on the fake server) and --max-cost (a clean stop)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.fakeserver import FakeModelServer
from tests.viewer.conftest import REPO

PAID = """
[models.paid]
provider = "scripted"
policy = "oracle"
pricing = {{ input_per_mtok = {price} }}
"""


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    for tier in ("tier_A", "tier_B"):
        shutil.copytree(REPO / "cases" / tier, pytester.path / "cases" / tier)
    return pytester


def test_plan_calls_no_model_and_estimates_from_earlier_runs(bench: pytest.Pytester) -> None:
    with FakeModelServer() as server:
        bench.makefile(".toml", models=f"""
            [models.fake]
            provider = "openai"
            model = "tiny"
            base_url = "{server.openai_url}"
            retries = 0
            timeout_s = 2
            pricing = {{ hourly_usd = 3.0 }}
        """ + PAID.format(price=1000))
        first = bench.runpytest("cases", "--model", "paid", "--instances", "i0", "-p", "no:cacheprovider",
                                "--agentfloor-report", "none")
        assert first.ret == 1 or first.ret == 0
        runs = [json.loads(ln) for ln in (bench.path / "reports" / "runs.jsonl").read_text().splitlines()]
        result = bench.runpytest("cases", "--model", "fake,paid", "--instances", "i0", "--agentfloor-plan",
                                 "-p", "no:cacheprovider")
        assert server.requests == []  # not even the probe
    assert result.ret == 0
    out = result.stdout.str()
    assert "agentfloor plan (no model is called):" in out and "::" not in out  # the plan, not the item list
    a = [r for r in runs if r["tier"] == "A"]
    mean_cost = sum(r["cost_usd"] for r in a) / len(a)
    exp_req = sum(r["turns"] for r in a)
    row = re.search(r"^paid\s+A\s+(\d+)\s+(\d+)\s+(\d+)\s+\$([\d.,]+)", out, re.M)
    assert row, out
    assert int(row.group(1)) == len(a) and int(row.group(3)) == exp_req
    assert float(row.group(4).replace(",", "")) == pytest.approx(mean_cost * len(a), rel=1e-3, abs=1e-4)
    assert re.search(r"^fake\s+A\s+\d+\s+\d+\s+—\s+—", out, re.M)  # no history: unknown, not zero
    assert "no earlier runs of fake" in out and "hourly_usd=3" in out
    assert sorted(p.name for p in (bench.path / "reports" / "sessions").iterdir()).__len__() == 1  # wrote nothing


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_max_cost_stops_cleanly_and_marks_the_run_partial(bench: pytest.Pytester, workers: list[str]) -> None:
    bench.makefile(".toml", models=PAID.format(price=1000))  # about 0.25-0.5 USD per item
    result = bench.runpytest("cases/tier_A", "--model", "paid", "--instances", "i0", "--max-cost", "2",
                             "-p", "no:cacheprovider", *workers, "-rs")
    out = result.stdout.str()
    runs = [json.loads(ln) for ln in (bench.path / "reports" / "latest" / "runs.jsonl").read_text().splitlines()]
    spent = sum(r["cost_usd"] for r in runs)
    per_item = max(r["cost_usd"] for r in runs)
    skipped = int(re.search(r"(\d+) skipped", out).group(1))
    assert runs and skipped and len(runs) + skipped == 25
    # it stops at the cap: at most one item per worker runs past it
    assert 2 <= spent < 2 + (2 if workers else 1) * per_item + 1e-9
    assert "--max-cost 2 USD reached" in out and "the run is PARTIAL" in out
    session = json.loads((bench.path / "reports" / "latest" / "session.json").read_text())
    assert session["complete"] is False
    assert f"stopped at --max-cost 2 USD: {skipped} item(s) skipped" in session["partial_reasons"]


def test_max_cost_usage_error(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases", "--max-cost", "-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--max-cost: expected a number of US dollars in (0, 1e+09], got '-1'*"])
