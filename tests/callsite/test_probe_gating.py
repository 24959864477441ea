"""The tool probe gates only items that send tools: call sites run for a model served without tool calling.

Issue 25, point 9: a model whose probe said ``no_tools`` had every call-site item skipped and the
run said COMPLETE. Here a real HTTP server answers in plain text only (no tool-call parser).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_agentfloor.callsite.kind import CallSiteKind
from pytest_agentfloor.suite.kind import EpisodeKind
from pytest_agentfloor.probe import gate, sends_tools
from tests.fakeserver import FakeModelServer, reply, status

REPO = Path(__file__).resolve().parents[2]

INTENT = '''
kind = "callsite"
site = "intent"
grader = "intent"
max_tokens = 10
labels = ["actuate", "other"]
system_prompt = "Reply with actuate or other."

[[case]]
group = "g"
label = "actuate"
prompt = "Switch the kettle on."

[[case]]
group = "g"
label = "other"
prompt = "Tell me a joke."
'''


def test_gate_is_a_pure_decision_per_kind() -> None:
    assert sends_tools(EpisodeKind()) and not sends_tools(CallSiteKind())
    for cls in ("text_leaked", "no_tools", "error", "tool_capable", None):
        assert gate(cls, CallSiteKind()) is None
    assert gate("no_tools", EpisodeKind()) == "skip" and gate("text_leaked", EpisodeKind()) == "skip"
    assert gate("error", EpisodeKind()) == "error" and gate("tool_capable", EpisodeKind()) is None
    assert gate("no_tools", object()) == "skip"  # a kind that says nothing sends tools


@pytest.fixture
def server():
    # a server without a tool-call parser: the probe reads plain text, a call site gets its label
    with FakeModelServer(lambda body: reply(content="actuate")) as srv:
        yield srv


@pytest.fixture
def project(pytester: pytest.Pytester, server: FakeModelServer) -> pytest.Pytester:
    (pytester.path / "cases" / "callsite").mkdir(parents=True)
    (pytester.path / "cases" / "callsite" / "intent.toml").write_text(INTENT)
    pytester.makefile(".toml", models=f"""
        [models.plain]
        provider = "openai"
        model = "no-tool-parser"
        base_url = "{server.openai_url}"
        timeout_s = 2
        retries = 0
        """)
    return pytester


def session(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "reports" / "session.json").read_text())


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_no_tools_model_answers_its_call_sites_and_the_run_is_complete(project: pytest.Pytester,
                                                                         server: FakeModelServer,
                                                                         xdist: list[str]) -> None:
    # the whole case set: a narrowed one is PARTIAL anyway; under xdist the workers gate by the controller's probe
    result = project.runpytest("--model", "plain", *xdist)
    result.assert_outcomes(passed=1, failed=1)  # both items ran: "actuate" is right once
    result.stdout.fnmatch_lines(["agentfloor: probe plain: no_tools (*); call-site items run regardless"])
    assert len(server.requests) == 3  # the probe, then one request per case (without tools)
    assert all(not body.get("tools") for body in server.requests[1:])
    run = session(project)
    assert run["complete"] is True and run["partial_reasons"] == []


def test_skipped_ladder_items_make_the_run_partial_and_say_why(project: pytest.Pytester) -> None:
    (project.path / "cases" / "tier_B").mkdir()
    shutil.copy(REPO / "cases" / "tier_B" / "B1.toml", project.path / "cases" / "tier_B")
    result = project.runpytest("--model", "plain")
    outcomes = result.parseoutcomes()
    assert (outcomes["passed"], outcomes["failed"]) == (1, 1)  # the call sites ran
    n = outcomes["skipped"]  # every item of the ladder case: it needs tool calls
    assert n >= 1
    run = session(project)
    assert run["complete"] is False
    assert run["partial_reasons"] == [f"model plain: probed as no_tools, {n} item(s) skipped "
                                      "(--run-non-capable runs them)"]
    result.stdout.fnmatch_lines(["agentfloor: session * PARTIAL (model plain: probed as no_tools, *"])


def test_a_probe_error_does_not_fail_call_sites_they_report_their_own_request(project: pytest.Pytester,
                                                                             server: FakeModelServer) -> None:
    # a server that refuses requests with tools (HTTP 400), as some do without a tool-call parser
    server.push(status(400, "tools are not supported by this deployment"))
    result = project.runpytest("--model", "plain")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["agentfloor: probe plain: error (*"])
    assert session(project)["complete"] is True
