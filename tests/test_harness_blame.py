"""Issue 27: nothing the harness does to itself is charged to the model.

Each case was reproduced on the code before the fix (it failed as the comment says) and is a
regression test now: queue waits that became timeouts (F3), harness deadlines graded as the
model's, a probe that excluded a model over a payload quirk, a server's "could not parse the
model's call" taken for a broken endpoint, a dead server that cost every item its retries.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.prefetch import episode_places
from tests.fakeserver import FakeModelServer, reply, stall, status
from tests.throughput.test_concurrency import A1, A1Server

REPO = Path(__file__).resolve().parents[1]


def records(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    files = sorted(pytester.path.glob("reports/sessions/*/runs.jsonl"))
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]


def model_toml(url: str, **extra: Any) -> str:
    lines = ["[models.fake]", 'provider = "openai"', 'model = "tiny"', f'base_url = "{url}"',
             "retries = 0", "timeout_s = 30"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def tier_a(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_A", pytester.path / "cases" / "tier_A")
    return pytester


# -- point 1: a queue wait is not the episode's time ---------------------------------------------
def test_waiting_for_the_only_connection_is_queue_time_not_a_timeout(tier_a: pytest.Pytester) -> None:
    # before: max_connections = 1 under the default concurrency (64) made most of these 15 items
    # "episode timed out (F3)": every episode's second request waited behind every first one
    with A1Server(delay_s=0.05) as srv:
        tier_a.path.joinpath("models.toml").write_text(model_toml(srv.server.openai_url, max_connections=1))
        result = tier_a.runpytest(*A1, "--model", "fake", "--episode-timeout", "1", "--junitxml=out.xml",
                                  "-o", "junit_family=xunit1")
    assert srv.peak == 1
    result.stdout.fnmatch_lines(["agentfloor: * episode(s) queued *s in all*(queue_s)"])
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 12 and outcomes.get("failed") == 3 and "errors" not in outcomes, outcomes
    recs = records(tier_a)
    assert len(recs) == 15 and not any(r["termination"] == "timeout" for r in recs)
    assert all(r["wall_s"] < 1 for r in recs)  # the episode's own time, never the queue's
    assert sum(r["queue_s"] for r in recs) > 1.0  # 15 episodes through one connection: they queued
    # JUnit: queue_s is a property, and an item's time is its episode, not its wait for a place
    cases = list(ET.parse(tier_a.path / "out.xml").getroot().iter("testcase"))
    props = [{p.get("name"): p.get("value") for p in c.iter("property")} for c in cases]
    assert all("queue_s" in p for p in props)
    by_name = {r["nodeid"].rsplit("::", 1)[-1]: r for r in recs}
    for case in cases:
        rec = by_name[case.get("name")]
        assert float(case.get("time")) < rec["wall_s"] + 0.5 < rec["wall_s"] + rec["queue_s"] + 0.5


def test_a_model_with_max_connections_plays_that_many_episodes_at_once() -> None:
    # before: None (no gate), so every episode in the window began and then queued for a connection
    # turn after turn; a gate of max_connections places per endpoint lets an episode start only
    # when the endpoint can take it (its wait there is queue_s)
    def item(**fields: Any) -> SimpleNamespace:
        return SimpleNamespace(model=ModelConfig(name="m", provider="openai", model="x", **fields),
                               config=SimpleNamespace())

    assert episode_places(item(max_connections=3)) == 3
    assert episode_places(item(max_connections=2, base_url=["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"])) == 4
    assert episode_places(item()) is None


# -- point 2: a deadline the harness imposes is an infrastructure error --------------------------
def test_a_hung_server_past_the_episode_timeout_is_an_infrastructure_error(tier_a: pytest.Pytester) -> None:
    # before: "episode timed out (F3)", a failure of the model counted in TCR
    with FakeModelServer(lambda body: stall(20, reply(content="late"))) as server:
        tier_a.path.joinpath("models.toml").write_text(model_toml(server.openai_url))
        result = tier_a.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances",
                                  "i0", "--no-probe", "--episode-timeout", "1")
    assert result.parseoutcomes().get("errors") == 1 and "failed" not in result.parseoutcomes()
    result.stdout.fnmatch_lines(["*infrastructure error (the harness's deadline): episode exceeded 1s*"])
    (rec,) = records(tier_a)
    assert rec["infra_error"] and rec["failure_mode"] is None and rec["termination"] == "timeout"


def test_a_retry_after_longer_than_the_time_left_is_an_infrastructure_error(tier_a: pytest.Pytester) -> None:
    with FakeModelServer(lambda body: status(429, "slow down", {"Retry-After": "30"})) as server:
        tier_a.path.joinpath("models.toml").write_text(model_toml(server.openai_url).replace("retries = 0",
                                                                                                "retries = 2"))
        result = tier_a.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances",
                                  "i0", "--no-probe", "--episode-timeout", "2")
    assert result.parseoutcomes().get("errors") == 1, result.outlines[-3:]
    (rec,) = records(tier_a)
    assert rec["infra_error"] and rec["failure_mode"] is None


# -- point 3: the probe measures, it does not exclude on a payload quirk ----------------------------
def test_a_malformed_call_in_the_probe_reply_does_not_exclude_the_model(tier_a: pytest.Pytester) -> None:
    # before: the probe said "error", and every item of the model became an infrastructure error
    # without a record, while the episodes grade the very same reply as the model's malformed call
    from tests.fakeserver import raw

    bad = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "c0", "type": "function",
                        "function": {"name": "lookup_record", "arguments": {"record_id": "CUS-4417"}}}]}}]}
    with A1Server(delay_s=0.0) as srv:
        srv.server.push(raw(bad))  # the probe's reply: arguments as an object, not a JSON string
        tier_a.path.joinpath("models.toml").write_text(model_toml(srv.server.openai_url))
        result = tier_a.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances", "i0")
    assert result.parseoutcomes() == {"passed": 1}, result.outlines[-5:]
    probe = json.loads(next(tier_a.path.glob("reports/sessions/*/probe.json")).read_text())
    assert probe["fake"]["classification"] == "tool_capable" and "malformed payload" in probe["fake"]["detail"]


def test_arguments_nested_past_the_parser_in_an_ollama_reply_are_the_models_malformed_call(
        tier_a: pytest.Pytester) -> None:
    # before (red team): Ollama sends arguments as an object, so 5,000-deep arguments made the whole
    # body unreadable: the probe said "error" and the model had no item, where OpenAI grades it F2
    from tests.fakeserver import FakeModelServer, raw

    deep = 5000
    body = ('{"model":"tiny","message":{"role":"assistant","content":"","tool_calls":[{"function":'
            '{"name":"lookup_record","arguments":' + '{"a":' * deep + "1" + "}" * deep + '}}]},"done":true}')
    with FakeModelServer(lambda _: raw(body)) as server:
        tier_a.path.joinpath("models.toml").write_text(
            model_toml(server.url).replace('provider = "openai"', 'provider = "ollama"'))
        result = tier_a.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances", "i0")
    assert result.parseoutcomes() == {"failed": 1}, result.outlines[-5:]
    (rec,) = records(tier_a)
    assert rec["termination"] == "malformed_call" and not rec["infra_error"] and "nested too deep" in rec["error"]
    probe = json.loads(next(tier_a.path.glob("reports/sessions/*/probe.json")).read_text())
    assert probe["fake"]["classification"] == "tool_capable"


# -- point 11: a dead endpoint is paused, its remaining items end at once ---------------------------
def test_a_dead_endpoint_is_paused_and_its_items_resume_later(tier_a: pytest.Pytester) -> None:
    # before: 20 items x 4 attempts (80 requests, each item about 2-3 s of back-off) against a
    # server that answers every request with a 502; now five failures in a row take it out
    healthy = {"on": False}
    with A1Server(delay_s=0.0) as srv:
        inner = srv.respond
        srv.server.responder = lambda body: inner(body) if healthy["on"] else status(502, "bad gateway")
        tier_a.path.joinpath("models.toml").write_text(model_toml(srv.server.openai_url).replace("retries = 0",
                                                                                                   "retries = 3"))
        args = ("cases/tier_A/A1.toml", "--model", "fake", "--instances", "i0", "--agentfloor-runs", "4",
                "--no-probe", "--agentfloor-concurrency", "1")
        down = tier_a.runpytest(*args)
        n_down = len(srv.server.requests)
        healthy["on"] = True
        from pytest_agentfloor.providers import endpoints

        endpoints._REGISTRY.clear()  # a later session is a new process: it knows nothing of the pause
        again = tier_a.runpytest(*args, "--agentfloor-resume")
    assert down.parseoutcomes().get("errors") == 20
    assert n_down <= 6, n_down  # five failures in a row, at most one re-probe after the pause
    down.stdout.fnmatch_lines(["*infrastructure error (openai): http://127.0.0.1:*/v1: endpoint down: "
                               "5 requests in a row failed (last: HTTP 502: bad gateway)*"])
    assert again.parseoutcomes() == {"passed": 16, "failed": 4}  # every item picked up again (v1 answers wrongly)


# -- point 12: the server says the model's output did not parse: the model's malformed call -------------
@pytest.mark.parametrize("message", [
    "The model produced output that does not match the expected peg-native format",
    "Failed to parse input at pos 12",
])
def test_a_servers_parse_refusal_is_the_models_malformed_call_under_openai(tier_a: pytest.Pytester,
                                                                          message: str) -> None:
    # before: under provider = "openai" an infrastructure error (retried, left out of TCR)
    with FakeModelServer(lambda body: status(500, message)) as server:
        tier_a.path.joinpath("models.toml").write_text(model_toml(server.openai_url).replace("retries = 0",
                                                                                               "retries = 3"))
        result = tier_a.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances",
                                  "i0", "--no-probe")
        assert len(server.requests) == 1  # not retried
    assert result.parseoutcomes() == {"failed": 1}
    (rec,) = records(tier_a)
    assert not rec["infra_error"] and rec["termination"] == "malformed_call" and message in rec["error"]


# -- point 14: the embedded server refused to parse: the model's raw text, read as text ----------------
PEG_REFUSAL = "The model produced output that does not match the expected peg-native format"


def refused_then_raw(tier_a: pytest.Pytester, written: str) -> tuple[pytest.RunResult, list[tuple[str, Any]]]:
    """A1 under provider "local": every chat request refused (HTTP 500, llama.cpp's parse error), and
    `written` as the model's text when asked again without tool parsing; the result and the raw requests."""
    with FakeModelServer(lambda body: status(500, PEG_REFUSAL)) as server:
        server.raw_text = written
        tier_a.path.joinpath("models.toml").write_text(
            model_toml(server.openai_url).replace('provider = "openai"', 'provider = "local"'))
        result = tier_a.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances",
                                  "i0", "--no-probe")
        return result, list(server.raw_requests)


def test_the_embedded_servers_refusal_keeps_the_models_text_graded_as_text(tier_a: pytest.Pytester) -> None:
    # before: "malformed call (F2)" with 0 tokens and no text: neither the user nor a re-grade could
    # see what the model said, and the paper's rule for text (no native call) was never applied
    written = '```json\n{"name": "get_attribute", "arguments": {"record_id": "INV-Q7P2K"}}\n```'
    refusal = PEG_REFUSAL
    result, raw_requests = refused_then_raw(tier_a, written)
    paths = [p for p, _ in raw_requests]
    rendered = raw_requests[0][1]
    assert paths == ["/apply-template", "/completion"]
    assert [t["function"]["name"] for t in rendered["tools"]]  # the same prompt: tools included
    assert result.parseoutcomes() == {"failed": 1}
    (rec,) = records(tier_a)
    turn = rec["trajectory"]["turns"][0]
    assert rec["termination"] == "final_answer" and rec["calls"] == 0 and not rec["infra_error"]
    assert turn["content"] == written and turn["leaked_call"] and refusal in turn["refusal"]
    assert rec["tokens_out"] == 9


def test_calls_in_the_templates_format_that_the_server_refused_are_the_models_calls(tier_a: pytest.Pytester) -> None:
    # llama-server's parser reads one declared call; two, or one to a tool not on the menu, it refuses,
    # although they are what the embedded model's template asks for (tests/realmodel/test_template_formats.py)
    written = ('{"name": "get_attribute", "arguments": {"record_id": "INV-Q7P2K", "attribute": "units_on_hand"}}\n'
               '{"name": "search_everything", "arguments": {"q": "INV-Q7P2K"}}')
    refusal = PEG_REFUSAL
    result, _ = refused_then_raw(tier_a, written)
    assert result.parseoutcomes() == {"failed": 1}
    (rec,) = records(tier_a)
    turn = rec["trajectory"]["turns"][0]
    assert [c["name"] for c in turn["calls"]] == ["get_attribute", "search_everything"], turn
    assert "read as 2 call(s)" in turn["refusal"] and refusal in turn["refusal"]
    assert not turn["leaked_call"] and not rec["infra_error"]
    assert rec["failure_mode"] == "F1"  # the undeclared tool: the model's own hallucinated tool


def test_without_the_raw_text_the_refusal_stands_as_the_models_malformed_call(tier_a: pytest.Pytester) -> None:
    with FakeModelServer(lambda body: status(500, "Failed to parse input at pos 3")) as server:
        tier_a.path.joinpath("models.toml").write_text(
            model_toml(server.openai_url).replace('provider = "openai"', 'provider = "local"'))
        result = tier_a.runpytest("cases/tier_A/A1.toml", "--model", "fake", "--variants", "v0", "--instances",
                                  "i0", "--no-probe")
    assert result.parseoutcomes() == {"failed": 1}
    (rec,) = records(tier_a)
    assert rec["termination"] == "malformed_call" and "Failed to parse input at pos 3" in rec["error"]


# -- point 10: a session that did not end normally is never COMPLETE -----------------------------------
CRASH_CONFTEST = """
import pytest

seen = []

def pytest_runtest_logreport(report):
    if hasattr(pytest, "_agentfloor_test_worker") or report.when != "call":
        return
    seen.append(report.nodeid)
    if len(seen) == 3:  # the controller dies mid-run, as when its stdout pipe closes
        raise RuntimeError("controller crashed")
"""


@pytest.mark.parametrize("xdist", [("-n", "2"), ("-p", "no:xdist")], ids=["xdist", "no-xdist"])
def test_a_crashed_session_is_partial_and_never_replaces_a_complete_one(pytester: pytest.Pytester,
                                                                        xdist: tuple[str, str]) -> None:
    # before: under -n 2 the crashed controller (exit status 3) wrote "complete": true and replaced
    # the complete session published before it
    tier_a = pytester
    (tier_a.path / "cases" / "tier_A").mkdir(parents=True)
    shutil.copy(REPO / "cases" / "tier_A" / "A1.toml", tier_a.path / "cases" / "tier_A")  # the whole case set
    args = ("cases", "--model", "oracle", "-p", "no:cacheprovider", *xdist)
    first = tier_a.runpytest_subprocess(*args)
    assert first.ret == 0
    complete = json.loads((tier_a.path / "reports" / "session.json").read_text())
    assert complete["complete"]
    tier_a.makeconftest(CRASH_CONFTEST)
    crashed = tier_a.runpytest_subprocess(*args)
    assert crashed.ret == pytest.ExitCode.INTERNAL_ERROR
    sessions = [json.loads(p.read_text()) for p in tier_a.path.glob("reports/sessions/*/session.json")]
    (mine,) = [s for s in sessions if s["session_id"] != complete["session_id"]]
    assert not mine["complete"] and "ended abnormally (exit status 3: internal error)" in mine["partial_reasons"]
    top = json.loads((tier_a.path / "reports" / "session.json").read_text())
    assert top["session_id"] == complete["session_id"]  # the complete one stays published


def test_the_terminal_reports_queued_time_apart() -> None:
    from pytest_agentfloor.session import queue_line

    assert queue_line([{"queue_s": 1.25}, {"queue_s": 0.0}, {}, {"queue_s": 0.5}]).startswith(
        "2 episode(s) queued 1.8s in all (longest 1.2s)")
    assert queue_line([{"queue_s": 0.0}, {"queue_s": None}]) == ""
