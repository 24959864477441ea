"""A few call-site cases against the embedded Qwen 0.5B model, through the plugin (pytester).

Whether the tiny model answers correctly is not checked: every item ends graded (pass or a named
rule), leaves a one-turn record with the server's token counts, and the intent site's 10-token
completion cap reaches the server.
"""

from __future__ import annotations

import shutil

import pytest

from pytest_agentfloor.local.server import LocalServer

from .helpers import REPO, bench_dir, outcome_total, records, run

pytestmark = pytest.mark.realmodel


def test_call_site_cases_run_graded_with_one_turn_records(pytester: pytest.Pytester, qwen_server: LocalServer) -> None:
    bench_dir(pytester, qwen_server.openai_url, tiers=(), max_tokens=128, timeout_s=120, retries=1)
    site_dir = pytester.path / "cases" / "callsite"
    shutil.copytree(REPO / "cases" / "callsite" / "installations", site_dir / "installations")
    for name in ("intent", "actuator"):
        shutil.copy(REPO / "cases" / "callsite" / f"{name}.toml", site_dir / f"{name}.toml")
    selection = "intent-lexical or actuator-a_control-01 or actuator-a_control-05 or actuator-b_flip-01"
    result = run(pytester, "cases/callsite", extra=("-k", selection))
    outcomes = result.parseoutcomes()
    assert outcome_total(result) == 7, result.stdout.str()
    assert outcomes.get("errors", 0) == 0, result.stdout.str()
    recs = records(pytester)
    assert len(recs) == 7 and sum(r["passed"] for r in recs) == outcomes.get("passed", 0)
    for r in recs:
        assert r["kind"] == "callsite" and not r["infra_error"] and r["turns"] == 1 and r["calls"] == 0
        assert r["tokens_in"] > 0 and r["tokens_out"] > 0
        assert r["passed"] or r["first_unmet"], r  # a failure names its rule
        if r["facets"]["site"] == "intent":
            assert r["tokens_out"] <= 10  # the router's completion cap reached the server
    act = [r for r in recs if r["facets"]["site"] == "actuator"]
    assert all(r["tokens_in"] > 500 for r in act)  # the registry went with the request
