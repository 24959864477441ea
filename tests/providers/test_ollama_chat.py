"""OllamaProvider over real HTTP against the fake server (127.0.0.1 only)."""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.providers.base import MalformedReply, ProviderError
from pytest_agentfloor.providers.ollama_chat import OllamaProvider, to_ollama_messages
from tests.fakeserver import (FakeModelServer, drop, raw, raw_tool_call, reply, stall,
                              status)

TOOLS: list[dict[str, Any]] = [{
    "type": "function",
    "function": {
        "name": "lookup_record",
        "description": "Fetch one record by id.",
        "parameters": {"type": "object", "properties": {"record_id": {"type": "string", "description": "id"}},
                       "required": ["record_id"]},
    },
}]
USER = [{"role": "user", "content": "Find record X."}]


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # The ollama client sends $OLLAMA_API_KEY on its own when no Authorization header is given.
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as srv:
        yield srv


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    delays: list[float] = []
    monkeypatch.setattr(time, "sleep", delays.append)
    return delays


def make(server: FakeModelServer, **kw: Any) -> OllamaProvider:
    fields: dict[str, Any] = {"name": "m", "provider": "ollama", "model": "qwen3:4b",
                              "base_url": server.url, "retries": 2, "timeout_s": 5.0}
    fields.update(kw)
    return OllamaProvider(ModelConfig(**fields))


def test_tool_calls_are_parsed_into_json_strings_with_ids(server: FakeModelServer) -> None:
    server.push(reply(tool_calls=[("lookup_record", {"record_id": "X"}),
                                  ("lookup_record", {"record_id": "Y"})], tokens_in=200, tokens_out=40))
    p = make(server)
    out = p.complete(USER, TOOLS, case=None)
    p.close()
    assert [c.id for c in out.tool_calls] == ["call_0", "call_1"]
    assert [c.name for c in out.tool_calls] == ["lookup_record", "lookup_record"]
    assert [json.loads(c.arguments) for c in out.tool_calls] == [{"record_id": "X"}, {"record_id": "Y"}]
    assert out.content is None  # Ollama sends "" next to tool calls
    assert out.finish_reason == "tool_calls"
    assert (out.tokens_in, out.tokens_out) == (200, 40)
    assert 0 < out.latency_s < 2


def test_request_uses_native_chat_with_options(server: FakeModelServer) -> None:
    make(server, temperature=0.2, seed=11, max_tokens=77, think=False).complete(USER, TOOLS, case=None)
    rec = server.received[0]
    body = rec.body
    assert rec.path == "/api/chat"
    assert body["model"] == "qwen3:4b"
    assert body["stream"] is False
    # num_ctx: sized for the longest ladder episode (13 turns, E2/E5): 1536 + 13 * 384 + 77 rounded up to 1024s
    assert body["options"] == {"temperature": 0.2, "seed": 11, "num_predict": 77, "num_ctx": 7168}
    assert body["think"] is False
    assert body["tools"] == TOOLS
    assert body["messages"] == USER
    assert "authorization" not in rec.headers


def test_seed_and_think_omitted_when_unset(server: FakeModelServer) -> None:
    make(server).complete(USER, TOOLS, case=None)
    body = server.requests[0]
    assert "seed" not in body["options"] and "think" not in body


def test_think_true_is_sent(server: FakeModelServer) -> None:
    make(server, think=True).complete(USER, TOOLS, case=None)
    assert server.requests[0]["think"] is True


CONVO: list[dict[str, Any]] = [
    {"role": "system", "content": "You are careful."},
    {"role": "user", "content": "Compare X and Y."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function",
         "function": {"name": "lookup_record", "arguments": "{\"record_id\": \"X\"}"}},
        {"id": "call_1", "type": "function",
         "function": {"name": "get_attribute", "arguments": "{\"record_id\": \"Y\", \"attribute\": \"price\"}"}}]},
    {"role": "tool", "tool_call_id": "call_0", "content": "{\"id\": \"X\", \"price\": 3}"},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"value\": 5}"},
]


def test_multi_turn_conversation_is_translated(server: FakeModelServer) -> None:
    server.push(reply(content="Y is dearer."))
    out = make(server).complete(CONVO, TOOLS, case=None)
    assert out.content == "Y is dearer." and out.finish_reason == "stop" and out.tool_calls == []
    sent = server.requests[0]["messages"]
    assert sent[:2] == CONVO[:2]
    assert sent[2] == {"role": "assistant", "tool_calls": [
        {"function": {"name": "lookup_record", "arguments": {"record_id": "X"}}},
        {"function": {"name": "get_attribute", "arguments": {"record_id": "Y", "attribute": "price"}}}]}
    assert sent[3] == {"role": "tool", "content": "{\"id\": \"X\", \"price\": 3}", "tool_name": "lookup_record"}
    assert sent[4] == {"role": "tool", "content": "{\"value\": 5}", "tool_name": "get_attribute"}


def test_ids_continue_across_turns(server: FakeModelServer) -> None:
    server.push(reply(tool_calls=[("compute_value", {"operation": "max", "operands": [3, 5]})]))
    out = make(server).complete(CONVO, TOOLS, case=None)
    assert [c.id for c in out.tool_calls] == ["call_2"]


def test_malformed_arguments_in_history_become_empty_objects() -> None:
    msgs = to_ollama_messages([{"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "lookup_record", "arguments": "{not json"}},
        {"id": "d", "type": "function", "function": {"name": "lookup_record", "arguments": "[1, 2]"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "error: arguments are not valid JSON"}])
    assert [c["function"]["arguments"] for c in msgs[0]["tool_calls"]] == [{}, {}]
    assert msgs[1]["tool_name"] == "lookup_record"


def test_missing_counts_read_as_zero(server: FakeModelServer) -> None:
    server.push(reply(content="ok", tokens_in=None, tokens_out=None))
    out = make(server).complete(USER, TOOLS, case=None)
    assert (out.tokens_in, out.tokens_out) == (0, 0)


def test_done_reason_length_means_truncated(server: FakeModelServer) -> None:
    server.push(reply(content="The answer", finish_reason="length"))
    out = make(server, max_tokens=3).complete(USER, TOOLS, case=None)
    assert out.finish_reason == "length"
    assert server.requests[0]["options"]["num_predict"] == 3


@pytest.mark.parametrize("code", [500, 502, 429])
def test_transient_status_then_success_is_retried(server: FakeModelServer, sleeps: list[float],
                                                  code: int) -> None:
    server.push(status(code), reply(content="fine"))
    assert make(server).complete(USER, TOOLS, case=None).content == "fine"
    assert len(server.requests) == 2 and len(sleeps) == 1


def test_persistent_500_gives_up_after_retries_plus_one(server: FakeModelServer, sleeps: list[float]) -> None:
    server.push(*[status(500, "model runner crashed")] * 5)
    with pytest.raises(ProviderError) as info:
        make(server, retries=2).complete(USER, TOOLS, case=None)
    err = info.value
    assert len(server.requests) == 3 and err.transient
    assert err.endpoint == server.url and server.url in str(err)
    assert "500" in str(err) and "model runner crashed" in str(err) and "3 attempts" in str(err)


@pytest.mark.parametrize("code", [400, 404])
def test_client_errors_are_not_retried(server: FakeModelServer, sleeps: list[float], code: int) -> None:
    server.push(status(code, 'model "qwen3:4b" not found, try pulling it first'))
    with pytest.raises(ProviderError) as info:
        make(server).complete(USER, TOOLS, case=None)
    assert not info.value.transient and str(code) in str(info.value) and "not found" in str(info.value)
    assert len(server.requests) == 1 and sleeps == []


def test_stall_past_timeout_is_retried_then_reported(sleeps: list[float]) -> None:
    start = time.perf_counter()
    with FakeModelServer() as server:
        server.push(stall(2), stall(2))
        with pytest.raises(ProviderError) as info:
            make(server, timeout_s=0.5, retries=1).complete(USER, TOOLS, case=None)
        assert len(server.requests) == 2
    elapsed = time.perf_counter() - start
    assert info.value.transient and "timed out after 0.5s" in str(info.value)
    assert elapsed < 4  # the two stalls alone would take 4 s: the timeout cut them (a hang guard, not a timing)


def test_dropped_connection_is_transient(server: FakeModelServer, sleeps: list[float]) -> None:
    server.push(drop(), reply(content="back"))
    assert make(server).complete(USER, TOOLS, case=None).content == "back"
    server.push(drop(), drop())
    with pytest.raises(ProviderError) as info:
        make(server, retries=1).complete(USER, TOOLS, case=None)
    assert info.value.transient and "connection" in info.value.cause


def test_connection_refused_names_the_host(sleeps: list[float]) -> None:
    with FakeModelServer() as server:
        url = server.url
    p = OllamaProvider(ModelConfig(name="m", provider="ollama", model="x", base_url=url, retries=1))
    with pytest.raises(ProviderError) as info:
        p.complete(USER, TOOLS, case=None)
    assert info.value.transient and "connection refused" in str(info.value) and url in str(info.value)
    assert "2 attempts" in str(info.value)


def test_arguments_that_are_not_an_object_are_a_malformed_reply(server: FakeModelServer) -> None:
    server.push(raw_tool_call("lookup_record", "{not json"))
    with pytest.raises(MalformedReply):
        make(server).complete(USER, TOOLS, case=None)
    assert len(server.requests) == 1


def test_missing_function_name_is_a_malformed_reply(server: FakeModelServer) -> None:
    server.push(raw({"model": "m", "done": True, "done_reason": "stop",
                     "message": {"role": "assistant", "content": "",
                                 "tool_calls": [{"function": {"arguments": {}}}]}}))
    with pytest.raises(MalformedReply):
        make(server).complete(USER, TOOLS, case=None)


def test_server_side_tool_parse_error_is_a_malformed_reply_not_retried(server: FakeModelServer,
                                                                      sleeps: list[float]) -> None:
    server.push(status(500, "error parsing tool call: raw='{\"record_id\": X}', err=invalid character"))
    with pytest.raises(MalformedReply, match="error parsing tool call"):
        make(server).complete(USER, TOOLS, case=None)
    assert len(server.requests) == 1 and sleeps == []


def test_non_json_body_is_a_non_transient_error(server: FakeModelServer) -> None:
    server.push(raw("<html>proxy says hi</html>", content_type="text/html"))
    with pytest.raises(ProviderError) as info:
        make(server).complete(USER, TOOLS, case=None)
    assert not info.value.transient and len(server.requests) == 1


def test_missing_key_variable_is_a_clear_configuration_error(server: FakeModelServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTFLOOR_OLLAMA_KEY", raising=False)
    with pytest.raises(ProviderError) as info:
        make(server, api_key_env="AGENTFLOOR_OLLAMA_KEY")
    assert not info.value.transient and "AGENTFLOOR_OLLAMA_KEY" in str(info.value)


def test_key_is_sent_but_never_appears_in_errors(server: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
                                                 sleeps: list[float]) -> None:
    secret = "olk-test-fedcba9876543210"
    monkeypatch.setenv("AGENTFLOOR_OLLAMA_KEY", secret)
    p = make(server, api_key_env="AGENTFLOOR_OLLAMA_KEY", retries=1)
    p.complete(USER, TOOLS, case=None)
    assert server.received[0].headers["authorization"] == f"Bearer {secret}"
    server.push(status(401, f"unauthorized: {secret}"))
    server.push(status(500, f"key {secret}"), status(500, f"key {secret}"))
    server.push(status(500, f"error parsing tool call: {secret}"))
    errors: list[BaseException] = []
    for expected in (ProviderError, ProviderError, MalformedReply):
        with pytest.raises(expected) as info:
            p.complete(USER, TOOLS, case=None)
        errors.append(info.value)
    for exc in errors:
        chain: BaseException | None = exc
        while chain is not None:
            assert secret not in str(chain) and secret not in repr(chain)
            chain = chain.__cause__ or chain.__context__


def test_responder_scripts_a_whole_episode() -> None:
    def responder(body: dict[str, Any]) -> Any:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return reply(content=f"{last.get('tool_name')} said {last['content']}")
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
    assert second.content == "lookup_record said price=3"
