"""Issue 27 point 14: every call format the embedded model's chat template asks for reaches the
episode as tool calls, fed through the real llama-server.

The reply is fixed by prefilling the assistant turn (llama-server continues a trailing assistant
message and parses the prefill with what it generates), so each format is exactly the text under
test; `max_tokens = 1` leaves the model one token, its end of turn. Formats the server's own parser
refuses come back through the provider's raw-text path (tests/test_harness_blame.py fakes it)."""

from __future__ import annotations

import json

import pytest

from pytest_agentfloor.config import ModelConfig
from pytest_agentfloor.local.server import LocalServer
from pytest_agentfloor.providers.local import LocalProvider

pytestmark = pytest.mark.realmodel

TOOLS = [
    {"type": "function", "function": {"name": "lookup_record", "description": "Look up a record by id.",
                                      "parameters": {"type": "object", "properties": {"record_id": {"type": "string"}},
                                                     "required": ["record_id"]}}},
    {"type": "function", "function": {"name": "get_attribute", "description": "One attribute of a record.",
                                      "parameters": {"type": "object",
                                                     "properties": {"record_id": {"type": "string"},
                                                                    "attribute": {"type": "string"}},
                                                     "required": ["record_id", "attribute"]}}},
]
LOOKUP = '{"name": "lookup_record", "arguments": {"record_id": "EMP-1"}}'
OFFICE = '{"name": "get_attribute", "arguments": {"record_id": "EMP-1", "attribute": "office"}}'
UNDECLARED = '{"name": "search_records", "arguments": {"query": "EMP-1"}}'
EXTRA_ARG = '{"name": "lookup_record", "arguments": {"record_id": "EMP-1", "required": ["record_id"]}}'

# the text the model writes -> (the calls the episode gets, whether the server's parser refused it)
FORMATS = {
    "one call": (LOOKUP, [("lookup_record", {"record_id": "EMP-1"})], False),
    "text, then a call": ("I will look it up.\n" + LOOKUP, [("lookup_record", {"record_id": "EMP-1"})], False),
    "a call with an argument the schema lacks": (EXTRA_ARG, [("lookup_record", {"record_id": "EMP-1",
                                                                                "required": ["record_id"]})], False),
    "two calls, one per line": (LOOKUP + "\n" + OFFICE, [("lookup_record", {"record_id": "EMP-1"}),
                                                         ("get_attribute", {"record_id": "EMP-1",
                                                                            "attribute": "office"})], True),
    "a call to a tool not on the menu": (UNDECLARED, [("search_records", {"query": "EMP-1"})], True),
}


@pytest.fixture(scope="module")
def provider(qwen_server: LocalServer) -> LocalProvider:
    prov = LocalProvider(ModelConfig(name="formats", provider="local", base_url=qwen_server.openai_url,
                                     max_tokens=1, timeout_s=120, retries=0, temperature=0.0, seed=7))
    yield prov
    prov.close()


def _complete(provider: LocalProvider, written: str):
    messages = [{"role": "user", "content": "Where does EMP-1 sit?"}, {"role": "assistant", "content": written}]
    return provider.complete(messages, TOOLS)


@pytest.mark.parametrize("name", list(FORMATS))
def test_each_call_format_the_template_asks_for_reaches_the_episode_as_tool_calls(provider: LocalProvider,
                                                                                  name: str) -> None:
    written, calls, refused = FORMATS[name]
    reply = _complete(provider, written)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == calls
    assert reply.finish_reason == "tool_calls"
    # which of them llama-server's own parser refuses (a change here means the server's parser changed)
    assert bool(reply.refusal) is refused, reply.refusal
    if refused:
        assert "peg-native" in reply.refusal and "read as" in reply.refusal


def test_text_that_is_not_the_templates_format_stays_text(provider: LocalProvider) -> None:
    # the paper's rule: a call written as prose or in a code fence is not a native call
    fenced = "```json\n" + LOOKUP + "\n```"
    reply = _complete(provider, fenced)
    assert reply.tool_calls == [] and reply.content.startswith(fenced) and reply.refusal
