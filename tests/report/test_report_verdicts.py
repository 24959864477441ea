"""End to end: small samples and unreliable endpoints never turn into a confident report (issue 10)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(pytester: pytest.Pytester) -> pytest.Pytester:
    for tier in ("tier_A", "tier_D"):
        shutil.copytree(REPO / "cases" / tier, pytester.path / "cases" / tier)
    return pytester


def test_five_of_five_is_not_a_certainty(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/tier_A", "--model", "oracle", "--variants", "v0", "--instances", "i0",
                             "-p", "no:cacheprovider")
    text = result.stdout.str()
    # 5/5 in one (variant, instance, run) unit: the bootstrap alone said [100.0, 100.0]
    assert re.search(r"│ oracle +│ A +│ +5 │ +5 │ +100\.0% │ \[56\.6, 100\.0\] │", text), text
    assert "95% CIs: guarded (never narrower than the Wilson score interval" in text
    assert "oracle (≥" not in text.split("deployment recipes")[1]  # 56.6 % clears no τ in 60..90
    data = json.loads((bench.path / "reports" / "summary.json").read_text())
    assert data["config"]["interval_method"] == "guarded"
    assert data["tcr"]["oracle"]["A"]["ci_low"] == pytest.approx(0.565518, abs=1e-6)
    assert data["tcr"]["oracle"]["A"]["boot_low"] == 1.0

    paper = bench.runpytest("cases/tier_A", "--model", "oracle", "--variants", "v0", "--instances", "i0",
                            "--interval-method", "paper", "-p", "no:cacheprovider")
    assert re.search(r"│ oracle +│ A +│ +5 │ +5 │ +100\.0% │ \[100\.0, 100\.0\] │", paper.stdout.str())
    assert "plain percentile bootstrap as in the AgentFloor paper" in paper.stdout.str()
    assert "resampling run units" in paper.stdout.str()


def test_one_pair_is_insufficient_evidence_in_the_paired_table(bench: pytest.Pytester) -> None:
    result = bench.runpytest("cases/tier_D/D1.toml", "--model", "oracle,fault-repeat", "--agentfloor-reference", "oracle",
                             "--variants", "v0", "--instances", "i0", "-p", "no:cacheprovider", "--no-probe")
    text = result.stdout.str()
    paired = text.split("paired comparison against oracle")[1]
    row = next(line for line in paired.splitlines() if line.startswith("│ fault-repeat") and "│ D " in line)
    assert "too few" in row and "yes" not in row
    data = json.loads((bench.path / "reports" / "summary.json").read_text())
    test = data["paired"]["tests"]["fault-repeat"]["D"]
    assert test["n_pairs"] == 1 and test["equivalence_verdict"] == "insufficient evidence"
    assert data["paired"]["n_min_pairs"] == 35


def test_bad_interval_options_are_usage_errors(bench: pytest.Pytester) -> None:
    for args, msg in ((["--interval-method", "exact"], "*--interval-method: expected one of guarded, paper*"),
                      (["--noninferiority-bound", "90"], "*--noninferiority-bound: expected one of two-sided, one-sided*"),
                      (["--infra-threshold", "5%"], "*--infra-threshold: expected a share between 0 and 1*"),
                      (["--bootstrap-cluster", "variant"], "*--bootstrap-cluster: expected one of auto, unit, task, run*")):
        result = bench.runpytest("cases/tier_A", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([msg])


def test_offline_report_accepts_every_unit_and_method(bench: pytest.Pytester) -> None:
    bench.runpytest("cases/tier_A", "--model", "oracle", "--instances", "i0", "-p", "no:cacheprovider")
    for extra in (["--cluster", "run"], ["--cluster", "task"], ["--interval-method", "paper"],
                  ["--noninferiority-bound", "one-sided", "--infra-threshold", "0.1"]):
        res = bench.run(sys.executable, "-m", "pytest_agentfloor", "report", "reports/runs.jsonl", "--out", "rebuilt",
                        *extra)
        assert res.ret == 0, res.stderr.str()
    data = json.loads((bench.path / "rebuilt" / "summary.json").read_text())
    assert data["config"]["decision_bound"] == "one-sided" and data["config"]["infra_threshold"] == 0.1


def _flaky_and_steady() -> list[dict]:
    out = []
    for model, n_infra, n_pass in (("flaky", 203, 70), ("steady", 0, 150)):
        for i in range(280):
            infra = i < n_infra
            out.append({"model": model, "task": f"E{i % 5 + 1}", "tier": "E", "variant": f"v{(i // 5) % 5}",
                        "instance": "i0", "run": i // 25, "passed": (not infra) and i < n_infra + n_pass,
                        "infra_error": infra, "tokens_in": 10, "tokens_out": 5, "latency_s": 1.0, "wall_s": 1.0,
                        "busy_s": 1.0, "cost_usd": None})
    return out


def test_unreliable_endpoint_and_unknown_cost_in_every_report_file(tmp_path: Path) -> None:
    from pytest_agentfloor.report import write_reports
    from pytest_agentfloor.report.terminal import render_text

    meta = {"flaky": {"params_b": 1.0, "pricing": {}}, "steady": {"params_b": None, "pricing": {}}}
    summary = write_reports(_flaky_and_steady(), meta, tmp_path, n_boot=200)
    md = (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    data = json.loads((tmp_path / "summary.json").read_text())
    text = render_text(summary, width=160)
    for doc in (md, html, text):
        assert "unreliable endpoint" in doc
    assert "**90.9" not in md  # never bolded best
    assert data["tcr"]["flaky"]["E"]["unreliable"] is True
    assert data["tcr"]["flaky"]["E"]["tcr_infra_as_failure"] == pytest.approx(70 / 280)
    assert "flaky" not in data["pareto"]["E"]
    # steady has neither a price nor a size: unknown cost, never $0, no Pareto position
    cost_rows = [line for line in md.splitlines() if line.startswith("| steady |") and "unknown" in line]
    assert cost_rows and all("$0 " not in r and "| $0 |" not in r for r in cost_rows)
    assert data["cost"]["steady"]["overall"]["cost_per_run"] is None and data["pareto"]["overall"] == []


def test_records_flag_impossible_usage() -> None:
    from pytest_agentfloor.results import usage_invalid

    assert usage_invalid(100, 20, 1.5) == []
    assert usage_invalid(-5, 20, 1.5) == ["tokens_in"]
    assert usage_invalid(10, 10**12, -1.0) == ["tokens_out", "latency_s"]
    assert usage_invalid(None, "many", float("nan")) == ["tokens_out", "latency_s"]
