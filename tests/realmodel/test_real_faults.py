"""Fault injection between the harness and the real model server.

A stdlib proxy (faultproxy.py) answers 429/500 itself, drops connections, stalls past the
client timeout, or breaks the real reply's first tool call. The harness must retry what is
transient, classify what is not (a broken call is the model's F2; a server that keeps failing
is an infrastructure error), never hang, and leave one record per item whatever happens.
"""

from __future__ import annotations

import time
from typing import Iterator

import pytest

from pytest_agentfloor.local.server import LocalServer

from .faultproxy import FaultProxy
from .helpers import bench_dir, outcome_total, records, run

pytestmark = pytest.mark.realmodel


@pytest.fixture
def proxy(qwen_server: LocalServer) -> Iterator[FaultProxy]:
    with FaultProxy(qwen_server.url, max_stall_s=15) as p:
        yield p


def a1(pytester: pytest.Pytester, proxy: FaultProxy, **fields) -> pytest.Pytester:
    fields = {"max_tokens": 256, "timeout_s": 60, "retries": 2, **fields}
    return bench_dir(pytester, proxy.openai_url, cases=("tier_A/A1",), **fields)


def graded(result: pytest.RunResult) -> None:
    """The item ended passed or failed: a verdict on the model, not an error of the setup."""
    o = result.parseoutcomes()
    assert o.get("passed", 0) + o.get("failed", 0) == 1 and not o.get("errors"), result.stdout.str()


def test_429_500_and_a_dropped_connection_are_retried(pytester: pytest.Pytester, proxy: FaultProxy) -> None:
    proxy.push(("status", 429), ("status", 500), "drop")
    result = run(a1(pytester, proxy, retries=3))
    graded(result)
    assert proxy.faults_seen[:4] == ["status:429", "status:500", "drop", "pass"]
    (rec,) = records(pytester)
    assert not rec["infra_error"] and rec["turns"] >= 1 and rec["tokens_in"] > 0


def test_a_stall_past_the_client_timeout_is_retried(pytester: pytest.Pytester, proxy: FaultProxy) -> None:
    proxy.push(("stall", 14))
    t = time.perf_counter()
    result = run(a1(pytester, proxy, timeout_s=12, retries=1))
    graded(result)
    assert proxy.faults_seen[:2] == ["stall:14", "pass"]
    assert time.perf_counter() - t < 90
    (rec,) = records(pytester)
    assert not rec["infra_error"]


def test_a_persistent_500_is_an_infrastructure_error_with_its_record(pytester: pytest.Pytester,
                                                                     proxy: FaultProxy) -> None:
    proxy.reset(default=("status", 500))
    result = run(a1(pytester, proxy))
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "infrastructure error (local)" in out and "HTTP 500" in out and "after 3 attempts" in out
    assert proxy.faults_seen == ["status:500"] * 3
    (rec,) = records(pytester)
    assert rec["infra_error"] and not rec["passed"] and rec["failure_mode"] is None


def test_a_server_that_never_answers_cannot_hang_the_run(pytester: pytest.Pytester, proxy: FaultProxy) -> None:
    proxy.reset(default=("stall", 15))
    t = time.perf_counter()
    result = run(a1(pytester, proxy, timeout_s=1.5, retries=1))
    elapsed = time.perf_counter() - t
    result.assert_outcomes(errors=1)
    assert "timed out after 1.5s" in result.stdout.str()
    assert elapsed < 30, f"took {elapsed:.1f}s"  # two 15 s stalls would be 30 s: a hang guard, not a timing
    (rec,) = records(pytester)
    assert rec["infra_error"]


@pytest.mark.parametrize("fault, words", [
    ("bad_args", "arguments are not a JSON object"),
    ("no_name", "has no function name"),
])
def test_a_broken_tool_call_is_the_models_malformed_call(pytester: pytest.Pytester, proxy: FaultProxy,
                                                        fault: str, words: str) -> None:
    proxy.push(fault)
    # legacy (like tbb) ends the episode at a malformed call; agentfloor would let the model retry
    result = run(a1(pytester, proxy), extra=("--agentfloor-protocol", "legacy"))
    result.assert_outcomes(failed=1)
    (rec,) = records(pytester)
    assert (rec["termination"], rec["failure_mode"]) == ("malformed_call", "F2")
    assert not rec["infra_error"]
    assert proxy.faults_seen == [fault], "a malformed call is not retried"
    traj = rec["trajectory"]
    if fault == "bad_args":
        (call,) = traj["turns"][0]["calls"]
        assert call["malformed"] and call["raw_arguments"].startswith('{"record_id": "INV-')
        assert words in call["result"]["message"]
    else:
        assert words in (rec["error"] or "")


def test_a_mix_of_faults_over_a_tier_loses_no_record(pytester: pytest.Pytester, proxy: FaultProxy) -> None:
    faults = [("status", 429), "pass", ("status", 503), "drop", "pass", "bad_args", ("status", 500),
              ("status", 500), ("status", 500), "no_name", ("stall", 15), "pass"]
    proxy.push(*faults)
    bench_dir(pytester, proxy.openai_url, tiers=("tier_A",), max_tokens=256, timeout_s=10, retries=2)
    t = time.perf_counter()
    result = run(pytester, "cases/tier_A")
    assert time.perf_counter() - t < 240
    assert outcome_total(result) == 5, result.stdout.str()
    recs = records(pytester)
    assert sorted(r["task"] for r in recs) == ["A1", "A2", "A3", "A4", "A5"]
    assert sum(r["infra_error"] for r in recs) == result.parseoutcomes().get("errors", 0)
    # every scripted fault was served, unless the run of failures paused the endpoint first (after 5 in a
    # row the remaining requests end at once as infrastructure errors naming it: providers/base.py)
    assert len(proxy.log) >= len(faults) or any("paused, probed again" in (r.get("error") or "") for r in recs), \
        (proxy.log, [r.get("error") for r in recs])
