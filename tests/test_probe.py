"""The probe's classification (pure), and the one request it sends (over the fake HTTP server)."""

from __future__ import annotations

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.probe import CLASSIFICATIONS, PROBE_TOOL, classify, probe, probe_messages, probe_tools
from pytest_agentfloor.providers.base import MalformedReply, ProviderError, Reply, ToolCallOut
from pytest_agentfloor.providers.openai_chat import OpenAIProvider
from tests.fakeserver import FakeModelServer, drop, raw, reply, status


def text(content: str | None, finish: str = "stop") -> Reply:
    return Reply(content=content, finish_reason=finish, latency_s=0.25)


def call(name: str = PROBE_TOOL, args: str = '{"record_id": "CUS-4417"}') -> Reply:
    return Reply(content=None, tool_calls=[ToolCallOut("c0", name, args)], finish_reason="tool_calls")


def test_a_native_call_is_tool_capable() -> None:
    res = classify(call())
    assert res.classification == "tool_capable" and res.admitted
    assert "lookup_record" in res.detail and "CUS-4417" in res.detail


def test_a_native_call_of_another_tool_or_with_odd_arguments_is_still_native() -> None:
    res = classify(call("get_attribute", "not json"))
    assert res.classification == "tool_capable"
    assert "instead of" in res.detail


def test_native_call_wins_over_text_that_also_looks_like_one() -> None:
    r = call()
    r.content = '<tool_call>{"name": "lookup_record"}</tool_call>'
    assert classify(r).classification == "tool_capable"


@pytest.mark.parametrize("content", [
    '{"name": "lookup_record", "arguments": {"record_id": "CUS-4417"}}',
    '<tool_call>\n{"name": "lookup_record", "arguments": {"record_id": "CUS-4417"}}\n</tool_call>',
    '```json\n{"function": "lookup_record", "parameters": {"record_id": "CUS-4417"}}\n```',
    "I will call lookup_record(record_id='CUS-4417') now.",
    '[TOOL_CALLS] [{"name": "lookup_record", "arguments": {"record_id": "CUS-4417"}}]',
    "<function=lookup_record>{\"record_id\": \"CUS-4417\"}</function>",
    '{"record_id": "CUS-4417"}',
    "<|python_tag|>lookup_record.call(record_id=\"CUS-4417\")",
])
def test_a_call_written_in_text_is_text_leaked(content: str) -> None:
    res = classify(text(content))
    assert res.classification == "text_leaked", res
    assert not res.admitted


@pytest.mark.parametrize("content", [
    "The customer is in Lisbon.",
    "I cannot look up records, but you can check the CRM for customer CUS-4417.",
    "Use the lookup_record tool to find the city.",  # names the tool, but calls nothing
])
def test_plain_text_is_no_tools(content: str) -> None:
    res = classify(text(content))
    assert res.classification == "no_tools"
    assert content[:20] in res.detail


def test_empty_and_truncated_replies_are_no_tools_and_say_so() -> None:
    assert classify(text(None)).classification == "no_tools"
    assert "empty" in classify(text("   ")).detail
    res = classify(text("The customer", finish="length"))
    assert res.classification == "no_tools" and "completion cap" in res.detail
    leaked = classify(text('{"name": "lookup_record", "argu', finish="length"))
    assert leaked.classification == "text_leaked" and "completion cap" in leaked.detail


@pytest.mark.parametrize("exc, words", [
    (ProviderError("http://127.0.0.1:1/v1", "connection refused", transient=True), "endpoint error"),
    (KeyError("choices"), "unexpected KeyError"),
])
def test_failures_are_error(exc: BaseException, words: str) -> None:
    res = classify(None, exc, latency_s=1.5)
    assert res.classification == "error" and words in res.detail and res.latency_s == 1.5


def test_a_malformed_tool_call_payload_is_measured_not_excluded() -> None:
    # issue 27 point 3: the endpoint answered with a call the provider cannot read; the episodes grade
    # the same reply as the model's malformed call (F2), so the probe admits the model
    res = classify(None, MalformedReply("tool call 0 (lookup_record) has arguments of type dict"), latency_s=1.5)
    assert res.classification == "tool_capable" and res.admitted
    assert "malformed payload" in res.detail and "F2" in res.detail and res.latency_s == 1.5


def test_latency_comes_from_the_reply() -> None:
    assert classify(text("hi")).latency_s == 0.25


def test_classifications_are_the_four_of_the_protocol() -> None:
    assert CLASSIFICATIONS == ("tool_capable", "text_leaked", "no_tools", "error")


def test_the_request_is_one_simple_tool_with_the_benchmark_system_prompt() -> None:
    (tool,) = probe_tools()
    assert tool["function"]["name"] == PROBE_TOOL
    msgs = probe_messages()
    assert [m["role"] for m in msgs] == ["system", "user"]
    from pytest_agentfloor.episode import SYSTEM_PROMPTS

    assert msgs[0]["content"] == SYSTEM_PROMPTS["default"]


# -- the request, against a real HTTP server -------------------------------------------------
def provider_for(server: FakeModelServer, **kw) -> OpenAIProvider:
    cfg = ModelConfig(name="probe-me", provider="openai", model="m", base_url=server.openai_url,
                      timeout_s=2, retries=0, **kw)
    return OpenAIProvider(cfg)


@pytest.mark.parametrize("action, expected", [
    (reply(tool_calls=[("lookup_record", {"record_id": "CUS-4417"})]), "tool_capable"),
    (reply(content='<tool_call>{"name": "lookup_record", "arguments": {}}</tool_call>'), "text_leaked"),
    (reply(content="Lisbon."), "no_tools"),
    (status(500, "boom"), "error"),
    (drop(), "error"),
    (raw({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "x", "type": "function", "function": {"arguments": "{}"}}]}}]}), "tool_capable"),
])  # a call without a name: a malformed call, as the episode loop grades it (issue 27 point 3)
def test_probe_sends_one_request_and_classifies(action, expected: str) -> None:
    with FakeModelServer() as server:
        server.push(action)
        prov = provider_for(server)
        try:
            res = probe(prov)
        finally:
            prov.close()
        assert res.classification == expected, res
        assert len(server.requests) == 1
        body = server.requests[0]
        assert [t["function"]["name"] for t in body["tools"]] == [PROBE_TOOL]
        assert body["tool_choice"] == "auto"
