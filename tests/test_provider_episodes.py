"""Whole episodes through the plugin against a real HTTP server speaking each provider's API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_agentfloor.suite.loader import load_case, resolve
from tests.fakeserver import FakeModelServer, reply, stall, status

REPO = Path(__file__).resolve().parents[1]
B1 = REPO / "cases" / "tier_B" / "B1.toml"
SECRET = "sk-test-d0-not-leak-4242"


def follow_reference(body: dict[str, Any]):
    """A server-side 'model' that answers with B1's reference solution, turn by turn."""
    case, digest = load_case(B1)
    ref = resolve(case, "v0", "i0", digest).reference
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    step = ref[turn]
    if step.calls:
        return reply(tool_calls=[(c.tool, dict(c.args)) for c in step.calls])
    return reply(content=step.final)


@pytest.fixture
def server():
    with FakeModelServer(follow_reference) as srv:
        yield srv


@pytest.fixture
def bench(pytester: pytest.Pytester, server: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    shutil.copytree(REPO / "cases" / "tier_B", pytester.path / "cases" / "tier_B")
    monkeypatch.setenv("AF_TEST_KEY", SECRET)
    pytester.makefile(".toml", models=f"""
        [models.fake-openai]
        provider = "openai"
        model = "tiny-tools"
        base_url = "{server.openai_url}"
        api_key_env = "AF_TEST_KEY"
        seed = 7
        max_tokens = 300
        timeout_s = 0.5
        retries = 2
        pricing = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}

        [models.fake-ollama]
        provider = "ollama"
        model = "tiny-tools"
        base_url = "{server.url}"
        seed = 7
        max_tokens = 300
        timeout_s = 0.5
        retries = 2
    """)
    return pytester


def run(bench: pytest.Pytester, model: str, *extra: str, probe: bool = False) -> pytest.RunResult:
    return bench.runpytest("cases/tier_B/B1.toml", "--model", model, "--variants", "v0", "--instances", "i0",
                           "--junitxml=out.xml", *([] if probe else ["--no-probe"]), *extra)


def records(bench: pytest.Pytester) -> list[dict]:
    return [json.loads(line) for line in (bench.path / "reports" / "runs.jsonl").read_text().splitlines()]


def no_secret_anywhere(bench: pytest.Pytester, result: pytest.RunResult) -> None:
    for path in (bench.path / "reports" / "runs.jsonl", bench.path / "out.xml"):
        assert SECRET not in path.read_text()
    assert SECRET not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("model", ["fake-openai", "fake-ollama"])
def test_tool_episode_over_real_http(bench: pytest.Pytester, server: FakeModelServer, model: str) -> None:
    result = run(bench, model)
    result.assert_outcomes(passed=1)
    (rec,) = records(bench)
    assert rec["passed"] and rec["calls"] == 2 and rec["turns"] == 3
    assert (rec["tokens_in"], rec["tokens_out"]) == (33, 21)  # the server's usage, summed over turns
    assert rec["latency_s"] > 0
    assert len(server.requests) == 3
    first = server.requests[0]
    names = sorted(t["function"]["name"] for t in first["tools"])
    assert names == ["get_attribute", "list_options", "lookup_record", "search_records"]
    last = server.requests[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    if model == "fake-openai":
        assert (first["seed"], first["max_tokens"], first["temperature"]) == (7, 300, 0.0)
        assert server.received[0].headers.get("authorization") == f"Bearer {SECRET}"
        assert rec["cost_usd"] == pytest.approx((33 * 1.0 + 21 * 2.0) / 1e6)
    else:
        assert (first["options"]["seed"], first["options"]["num_predict"]) == (7, 300)
    no_secret_anywhere(bench, result)


@pytest.mark.parametrize("model", ["fake-openai", "fake-ollama"])
def test_transient_500_is_retried_and_the_episode_passes(bench: pytest.Pytester, server: FakeModelServer,
                                                          model: str, no_backoff: list[float]) -> None:
    server.push(status(500), status(429))
    run(bench, model).assert_outcomes(passed=1)
    assert len(server.requests) == 5
    assert len(no_backoff) == 2  # one backoff before each retry


@pytest.mark.parametrize("model", ["fake-openai", "fake-ollama"])
def test_persistent_500_is_an_infrastructure_error_not_a_failure(bench: pytest.Pytester, server: FakeModelServer,
                                                                  model: str, no_backoff: list[float]) -> None:
    server.responder = lambda body: status(500, "model runner crashed")
    result = run(bench, model)
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert f"infrastructure error ({model.split('-')[1]})" in out
    assert "127.0.0.1" in out and "500" in out and "after 3 attempts" in out
    assert len(server.requests) == 3 and len(no_backoff) == 2
    (rec,) = records(bench)
    assert rec["infra_error"] and not rec["passed"] and rec["failure_mode"] is None
    result.stdout.fnmatch_lines(["*B*0*0*-*1*"])  # zero graded runs, one infrastructure error
    no_secret_anywhere(bench, result)


@pytest.mark.parametrize("model", ["fake-openai", "fake-ollama"])
def test_timeout_is_retried_then_reported(bench: pytest.Pytester, server: FakeModelServer, model: str,
                                         no_backoff: list[float]) -> None:
    server.responder = lambda body: stall(5)
    result = run(bench, model)
    result.assert_outcomes(errors=1)
    out = result.stdout.str().lower()
    assert "timed out after 0.5s" in out or "timeout" in out
    assert "after 3 attempts" in out  # counted by the client: a loaded server may not see every attempt


def test_text_that_looks_like_a_call_is_no_call(bench: pytest.Pytester, server: FakeModelServer) -> None:
    server.responder = lambda body: reply(
        content='{"name": "search_records", "arguments": {"query": "Halvorsen Fasteners"}}')
    result = run(bench, "fake-openai")
    result.assert_outcomes(failed=1)
    (rec,) = records(bench)
    assert rec["calls"] == 0 and rec["failure_mode"] == "F5b"
    assert rec["trajectory"]["turns"][0]["leaked_call"] is True


@pytest.mark.parametrize("protocol,termination", [("tbb", "truncated"), ("agentfloor", "final_answer")])
def test_truncation_at_the_completion_cap(bench: pytest.Pytester, server: FakeModelServer, protocol: str,
                                          termination: str) -> None:
    """Under tbb a cut-off reply ends the episode; under agentfloor it is read like any reply."""
    server.responder = lambda body: reply(content="The payment terms are", finish_reason="length")
    run(bench, "fake-ollama", "--agentfloor-protocol", protocol).assert_outcomes(failed=1)
    (rec,) = records(bench)
    assert (rec["termination"], rec["terminal_flag"]) == (termination, "truncation")


@pytest.mark.parametrize("model", ["fake-openai", "fake-ollama"])
def test_probe_admits_a_tool_calling_model(bench: pytest.Pytester, server: FakeModelServer, model: str) -> None:
    server.push(reply(tool_calls=[("lookup_record", {"record_id": "CUS-4417"})]))
    result = run(bench, model, probe=True)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"agentfloor: probe {model}: tool_capable"])
    probe = json.loads((bench.path / "reports" / "probe.json").read_text())
    assert probe[model]["classification"] == "tool_capable"
    assert json.loads((bench.path / "reports" / "summary.json").read_text())["probe"][model] == "tool_capable"


def test_probe_skips_a_model_that_leaks_calls_into_text(bench: pytest.Pytester, server: FakeModelServer) -> None:
    server.push(reply(content='{"name": "lookup_record", "arguments": {"record_id": "CUS-4417"}}'))
    result = run(bench, "fake-openai", probe=True)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["agentfloor: probe fake-openai: text_leaked (*"])
    assert len(server.requests) == 1  # the probe only: no episode ran
    server.push(reply(content="I cannot use tools."))
    result = run(bench, "fake-openai", "--run-non-capable", "-rs", probe=True)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["agentfloor: probe fake-openai: no_tools (*"])


def test_an_unset_api_key_variable_is_a_usage_error_naming_it(bench: pytest.Pytester,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AF_TEST_KEY")
    result = run(bench, "fake-openai")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*models.fake-openai.api_key_env: environment variable AF_TEST_KEY is not set*"])
