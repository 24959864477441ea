"""OpenAIProvider over real HTTP against the fake server (127.0.0.1 only)."""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.providers.base import MalformedReply, ProviderError
from pytest_agentfloor.providers.openai_chat import OpenAIProvider
from tests.fakeserver import (FakeModelServer, drop, raw, raw_tool_call, reply, stall,
                              status)

TOOLS: list[dict[str, Any]] = [{
    "type": "function",
    "function": {
        "name": "lookup_record",
        "description": "Fetch one record by id.",
        "parameters": {"type": "object", "properties": {"record_id": {"type": "string"}},
                       "required": ["record_id"], "additionalProperties": False},
    },
}]
USER = [{"role": "user", "content": "Find record X."}]


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as srv:
        yield srv


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Backoff delays requested by with_retries, without actually waiting."""
    delays: list[float] = []
    monkeypatch.setattr(time, "sleep", delays.append)
    return delays


def make(server: FakeModelServer, **kw: Any) -> OpenAIProvider:
    fields: dict[str, Any] = {"name": "m", "provider": "openai", "model": "gpt-test",
                              "base_url": server.openai_url, "retries": 2, "timeout_s": 5.0}
    fields.update(kw)
    return OpenAIProvider(ModelConfig(**fields))


def test_tool_calls_are_parsed_with_raw_arguments_and_ids(server: FakeModelServer) -> None:
    server.push(reply(content="Looking it up.", tool_calls=[
        ("lookup_record", {"record_id": "X"}, "call_a"),
        ("lookup_record", {"record_id": "Y"}, "call_b"),
    ], tokens_in=120, tokens_out=30))
    p = make(server)
    out = p.complete(USER, TOOLS, case=None)
    p.close()
    assert out.content == "Looking it up."
    assert [(c.id, c.name) for c in out.tool_calls] == [("call_a", "lookup_record"), ("call_b", "lookup_record")]
    assert [json.loads(c.arguments) for c in out.tool_calls] == [{"record_id": "X"}, {"record_id": "Y"}]
    assert all(isinstance(c.arguments, str) for c in out.tool_calls)
    assert out.finish_reason == "tool_calls"
    assert (out.tokens_in, out.tokens_out) == (120, 30)
    assert 0 < out.latency_s < 2


def test_request_carries_tools_sampling_and_cap(server: FakeModelServer) -> None:
    p = make(server, temperature=0.3, seed=7, max_tokens=99, think=True)
    p.complete(USER, TOOLS, case=None)
    body = server.requests[0]
    assert server.received[0].path == "/v1/chat/completions"
    assert body["model"] == "gpt-test"
    assert body["tools"] == TOOLS
    assert body["tool_choice"] == "auto"
    assert body["temperature"] == 0.3
    assert body["seed"] == 7
    assert body["max_tokens"] == 99
    assert body["messages"] == USER
    assert "reasoning_effort" not in body and "think" not in body  # think is documented as ignored
    assert body.get("stream") in (None, False)


def test_seed_omitted_when_unset(server: FakeModelServer) -> None:
    make(server).complete(USER, TOOLS, case=None)
    assert "seed" not in server.requests[0]


def test_multi_turn_conversation_is_sent_as_is(server: FakeModelServer) -> None:
    convo: list[dict[str, Any]] = [
        {"role": "system", "content": "You are careful."},
        {"role": "user", "content": "Find record X."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_0", "type": "function",
             "function": {"name": "lookup_record", "arguments": "{\"record_id\": \"X\"}"}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "{\"id\": \"X\", \"price\": 3}"},
    ]
    server.push(reply(content="X costs 3."))
    out = make(server).complete(convo + [], TOOLS, case=None)
    assert out.content == "X costs 3." and out.finish_reason == "stop" and out.tool_calls == []
    assert server.requests[0]["messages"] == convo


def test_internal_message_keys_are_not_sent(server: FakeModelServer) -> None:
    make(server).complete([{"role": "user", "content": "hi", "_turn": 3}], TOOLS, case=None)
    assert server.requests[0]["messages"] == [{"role": "user", "content": "hi"}]


def test_missing_tool_call_ids_are_generated_and_unique_in_the_episode(server: FakeModelServer) -> None:
    body = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"type": "function", "function": {"name": "lookup_record", "arguments": "{}"}}]}}]}
    server.push(raw(body))
    history = USER + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "lookup_record", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "{}"}]
    out = make(server).complete(history, TOOLS, case=None)
    assert [c.id for c in out.tool_calls] == ["call_1"]


def test_usage_absent_reads_as_zero(server: FakeModelServer) -> None:
    server.push(reply(content="ok", tokens_in=None, tokens_out=None))
    out = make(server).complete(USER, TOOLS, case=None)
    assert (out.tokens_in, out.tokens_out) == (0, 0)


def test_finish_reason_length_means_truncated(server: FakeModelServer) -> None:
    server.push(reply(content="The answer is", finish_reason="length"))
    assert make(server, max_tokens=4).complete(USER, TOOLS, case=None).finish_reason == "length"


def test_stop_with_tool_calls_normalises_to_tool_calls(server: FakeModelServer) -> None:
    server.push(reply(tool_calls=[("lookup_record", {"record_id": "X"})], finish_reason="stop"))
    assert make(server).complete(USER, TOOLS, case=None).finish_reason == "tool_calls"


@pytest.mark.parametrize("code", [500, 503, 429])
def test_transient_status_then_success_is_retried(server: FakeModelServer, sleeps: list[float],
                                                  code: int) -> None:
    server.push(status(code), reply(content="fine"))
    out = make(server).complete(USER, TOOLS, case=None)
    assert out.content == "fine"
    assert len(server.requests) == 2
    assert len(sleeps) == 1


def test_persistent_500_gives_up_after_retries_plus_one(server: FakeModelServer, sleeps: list[float]) -> None:
    server.push(*[status(500, "upstream exploded")] * 5)
    with pytest.raises(ProviderError) as info:
        make(server, retries=2).complete(USER, TOOLS, case=None)
    err = info.value
    assert len(server.requests) == 3
    assert err.transient
    assert err.endpoint == server.openai_url
    assert server.openai_url in str(err)
    assert "500" in str(err) and "upstream exploded" in str(err) and "3 attempts" in str(err)


@pytest.mark.parametrize("code", [400, 401, 404, 422])
def test_client_errors_are_not_retried(server: FakeModelServer, sleeps: list[float], code: int) -> None:
    server.push(status(code, "no such model"))
    with pytest.raises(ProviderError) as info:
        make(server).complete(USER, TOOLS, case=None)
    assert not info.value.transient
    assert str(code) in str(info.value) and "no such model" in str(info.value)
    assert len(server.requests) == 1 and sleeps == []


def test_stall_past_timeout_is_retried_then_reported(sleeps: list[float]) -> None:
    start = time.perf_counter()
    with FakeModelServer() as server:
        server.push(stall(2), stall(2))
        with pytest.raises(ProviderError) as info:
            make(server, timeout_s=0.5, retries=1).complete(USER, TOOLS, case=None)
        assert len(server.requests) == 2
    elapsed = time.perf_counter() - start  # includes shutting down with a handler still stalled
    assert info.value.transient
    assert "timed out after 0.5s" in str(info.value)
    assert elapsed < 4  # the two stalls alone would take 4 s: the timeout cut them (a hang guard, not a timing)


def test_dropped_connection_is_transient(server: FakeModelServer, sleeps: list[float]) -> None:
    server.push(drop(), reply(content="back"))
    assert make(server).complete(USER, TOOLS, case=None).content == "back"
    server.push(drop(), drop())
    with pytest.raises(ProviderError) as info:
        make(server, retries=1).complete(USER, TOOLS, case=None)
    assert info.value.transient and "connection" in info.value.cause


def test_connection_refused_is_transient_and_names_endpoint(sleeps: list[float]) -> None:
    with FakeModelServer() as server:
        url = server.openai_url
    p = OpenAIProvider(ModelConfig(name="m", provider="openai", model="x", base_url=url, retries=1))
    with pytest.raises(ProviderError) as info:
        p.complete(USER, TOOLS, case=None)
    assert info.value.transient and "connection refused" in str(info.value) and url in str(info.value)


def test_invalid_json_arguments_are_kept_raw(server: FakeModelServer) -> None:
    server.push(raw_tool_call("lookup_record", "{not json"))
    out = make(server).complete(USER, TOOLS, case=None)
    assert out.tool_calls[0].name == "lookup_record"
    assert out.tool_calls[0].arguments == "{not json"
    assert out.finish_reason == "tool_calls"


@pytest.mark.parametrize("function", [
    {"name": "lookup_record", "arguments": {"record_id": "X"}},  # object instead of JSON text
    {"arguments": "{}"},  # no name
    {"name": "", "arguments": "{}"},
])
def test_unreadable_tool_call_payload_is_malformed_reply(server: FakeModelServer, function: dict) -> None:
    server.push(raw({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": function}]}}]}))
    with pytest.raises(MalformedReply):
        make(server).complete(USER, TOOLS, case=None)
    assert len(server.requests) == 1


def test_missing_key_variable_is_a_clear_configuration_error(server: FakeModelServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTFLOOR_TEST_KEY", raising=False)
    with pytest.raises(ProviderError) as info:
        make(server, api_key_env="AGENTFLOOR_TEST_KEY")
    assert not info.value.transient
    assert "AGENTFLOOR_TEST_KEY" in str(info.value)
    assert server.requests == []


def test_key_is_sent_but_never_appears_in_errors(server: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
                                                 sleeps: list[float]) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("AGENTFLOOR_TEST_KEY", secret)
    p = make(server, api_key_env="AGENTFLOOR_TEST_KEY", retries=1)
    server.push(reply(content="ok"))
    p.complete(USER, TOOLS, case=None)
    assert server.received[0].headers["authorization"] == f"Bearer {secret}"
    assert secret not in json.dumps(server.requests)

    errors: list[BaseException] = []
    server.push(status(401, f"Incorrect API key provided: {secret}"))  # a server that echoes it
    server.push(status(500, f"bad key {secret}"), status(500, f"bad key {secret}"))
    for _ in range(2):
        with pytest.raises(ProviderError) as info:
            p.complete(USER, TOOLS, case=None)
        errors.append(info.value)
    for exc in errors:
        chain: BaseException | None = exc
        while chain is not None:
            assert secret not in str(chain) and secret not in repr(chain)
            chain = chain.__cause__ or chain.__context__


def test_credentials_in_base_url_do_not_reach_the_endpoint_name(sleeps: list[float]) -> None:
    with FakeModelServer() as server:
        url = server.openai_url.replace("http://", "http://user:hunter2@")
        server.push(status(500), status(500))
        p = OpenAIProvider(ModelConfig(name="m", provider="openai", model="x", base_url=url, retries=1))
        with pytest.raises(ProviderError) as info:
            p.complete(USER, TOOLS, case=None)
    assert "hunter2" not in str(info.value) and "hunter2" not in info.value.endpoint


def test_default_base_url_is_openai() -> None:
    p = OpenAIProvider(ModelConfig(name="m", provider="openai", model="gpt-4o-mini"))  # no request made
    assert p.endpoint == "https://api.openai.com/v1"
    p.close()


def test_responder_scripts_a_whole_episode() -> None:
    def responder(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return reply(content=f"Got {body['messages'][-1]['content']}")
        return reply(tool_calls=[("lookup_record", {"record_id": "X"})])

    with FakeModelServer(responder) as server:
        p = make(server)
        messages: list[dict[str, Any]] = list(USER)
        first = p.complete(messages, TOOLS, case=None)
        call = first.tool_calls[0]
        messages.append({"role": "assistant", "content": first.content, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}]})
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "price=3"})
        second = p.complete(messages, TOOLS, case=None)
        p.close()
    assert second.content == "Got price=3" and second.finish_reason == "stop"
    assert server.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": call.id, "content": "price=3"}


def test_the_completion_cap_field_follows_the_endpoint() -> None:
    from pytest_agentfloor.config import ModelConfig
    from pytest_agentfloor.providers.openai_chat import OpenAIProvider

    official = OpenAIProvider(ModelConfig(name="o", provider="openai", model="gpt-5"))
    compatible = OpenAIProvider(ModelConfig(name="c", provider="openai", model="m", base_url="http://127.0.0.1:9/v1"))
    assert (official._cap_field, compatible._cap_field) == ("max_completion_tokens", "max_tokens")
    official.close()
    compatible.close()


def test_request_is_what_the_clients_create_would_send(server: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider posts its body through client.post, skipping create()'s walk of the body (CPU);
    the server must see the same body and headers as from create() itself."""
    monkeypatch.setenv("AGENTFLOOR_TEST_KEY", "sk-test-key")
    p = make(server, api_key_env="AGENTFLOOR_TEST_KEY", seed=3, reasoning_effort="low", max_tokens=50)
    history = USER + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "lookup_record", "arguments": '{"record_id": "X"}'}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "{\"ok\": true}"}]
    p.complete(history, TOOLS, case=None, json_reply=True)
    ours = server.received[-1]
    p._client.chat.completions.create(**ours.body)  # the same request through the typed method
    theirs = server.received[-1]
    p.close()
    assert ours.body == theirs.body and ours.body["messages"] == history
    volatile = {"x-stainless-retry-count", "x-stainless-read-timeout", "content-length", "idempotency-key"}
    assert {k: v for k, v in ours.headers.items() if k not in volatile} == \
           {k: v for k, v in theirs.headers.items() if k not in volatile}
    assert ours.headers["authorization"] == "Bearer sk-test-key"
